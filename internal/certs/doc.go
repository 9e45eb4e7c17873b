// Package certs makes and rotates the serving certificates of the
// self-signed certificate mode: the per-service secret
// <svc>-kserve-self-signed-certs that the presets mount into the model
// servers and the endpoint picker, and the webhook server's certificate.
//
// Three layers:
//   - Pure functions (NewCA, Issue, ParsePair, NeedsRotation, RenewAt):
//     ECDSA P-256 keys only; a CA lives a year and a leaf 90 days by
//     default (Lifetimes), each renewed in the last third of its life.
//   - Authority: one CA shared by every certificate the controller issues,
//     kept in the secret odh-serving-self-signed-ca in the system namespace
//     and in memory, and EnsureServingSecret, which the reconciler calls for
//     each service.
//   - WebhookCerts: a manager.Runnable that keeps the webhook's secret and
//     files valid and injects the CA bundle into the ValidatingWebhookConfiguration
//     and the CRDs' conversion webhooks.
//
// Why one shared CA. KServe generated a 4096-bit RSA key per service on
// every reconcile (about 0.8 s of CPU each). Here the CA key is generated
// once per CA lifetime, and a leaf key (tens of microseconds for P-256)
// only when a secret is missing, its names changed or it is due for
// renewal; a steady-state reconcile parses the secret it already has and
// writes nothing. A shared CA also gives clients one bundle to trust for
// every service (ca.crt in each secret), which stays the same when leaves
// rotate, and lets the webhook's caBundle survive leaf rotations. The cost:
// the CA key signs certificates for every namespace, so it stays in the
// system namespace, readable only by the controller. When the CA rotates,
// the bundle holds the old and the new CA until the next rotation, and
// leaves signed by the old CA are replaced on their own schedule, well
// before the old CA expires.
//
// Writes are optimistic (resourceVersion), so replicas racing to create or
// rotate the same secret converge on the winner's content.
package certs

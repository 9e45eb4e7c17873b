package build

import (
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// certificate adds, in the cert-manager mode, a Certificate for the Service
// named service, stored in secret. Keys are ECDSA P-256: cheap to make and
// as strong as the RSA-4096 keys KServe generated on every reconcile.
func (b *builder) certificate(name, service, secret, component string) {
	if b.opts.CertMode != convention.CertManager {
		return
	}
	issuer := b.opts.CertIssuer
	if issuer.Name == "" {
		issuer = CertIssuer{Kind: convention.CertIssuerKind, Name: convention.CertIssuerName}
	}
	if issuer.Kind == "" {
		issuer.Kind = "Issuer"
	}
	ns := b.svc.Namespace
	b.add(b.custom("cert-manager.io/v1", "Certificate", name, component, map[string]any{
		"secretName": secret,
		"dnsNames": []any{
			service, service + "." + ns, service + "." + ns + ".svc", service + "." + ns + ".svc.cluster.local",
		},
		"usages":     []any{"server auth"},
		"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": issuer.Kind, "name": issuer.Name},
	}))
}

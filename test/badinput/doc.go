// Package badinput runs a corpus of bad inputs through every entry point
// that can see each one, against a real kube-apiserver and etcd: `render`
// and `post-render --mode static` (internal/cli, in-process), `presets lint`,
// the validating webhook, and `helm install` of charts/odh-serving with bad
// values. Each entry point must fail with the message the case names, write
// nothing on stdout, and leave nothing in the cluster.
//
// A case is a file under testdata/<category>/ (services, presets, streams,
// values) whose first lines are comments:
//
//	# error: <substring every entry point's error must contain>
//	# error[<entry>]: <the substring for one entry point, when it words it otherwise>
//	# accepted[<entry>]: <why that entry point lets the input through>
//	# skip[<entry>]: <why that entry point cannot even be given the input>
//
// TestRenderWebhookAndAPIServerAgree sends every service case, and one
// case per bound the CRD schemas state (generated from the CRDs), through
// render, the webhook's handler and the API server (a server-side dry run)
// and checks that all three refuse the same inputs and name the same field.
//
// An accepted[webhook] case is checked with a server-side dry run: the API
// server must admit it, so the corpus says truly what the webhook leaves to
// the render. The engine's own bad inputs (engine/testdata/bad) run here
// too, as services.
package badinput

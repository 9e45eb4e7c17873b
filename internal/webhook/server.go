package webhook

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Register adds the validating, replicas and conversion webhooks to a
// webhook server; v validates.
func Register(server webhook.Server, v Validator) {
	server.Register(ValidatePath, &webhook.Admission{Handler: v})
	server.Register(ReplicasPath, &webhook.Admission{Handler: Replicas{}})
	server.Register(ConvertPath, Converter{})
}

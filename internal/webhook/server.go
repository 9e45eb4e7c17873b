package webhook

import (
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Register adds the validating, replicas and conversion webhooks to a
// webhook server.
func Register(server webhook.Server) {
	server.Register(ValidatePath, &webhook.Admission{Handler: Validator{}})
	server.Register(ReplicasPath, &webhook.Admission{Handler: Replicas{}})
	server.Register(ConvertPath, Converter{})
}

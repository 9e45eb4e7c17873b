package webhook

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// ConvertPath is where the conversion webhook is served.
const ConvertPath = "/convert"

// Register adds the validating and conversion webhooks to a webhook server.
// The scheme must hold both API versions.
func Register(server webhook.Server, scheme *runtime.Scheme) {
	server.Register(ValidatePath, &webhook.Admission{Handler: Validator{}})
	server.Register(ConvertPath, conversion.NewWebhookHandler(scheme))
}

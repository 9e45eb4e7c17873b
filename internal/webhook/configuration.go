package webhook

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// ValidatingConfigurationName names the ValidatingWebhookConfiguration.
// Webhook names stay short: OLM rejects names over 63 characters.
const ValidatingConfigurationName = "odh-serving-validation"

// ValidatingConfiguration is the ValidatingWebhookConfiguration that sends
// creates and updates of both kinds, in each version as written, to the
// webhook Service. Exact matching matters: a v1alpha1 request must reach
// the webhook as v1alpha1, before conversion drops fields it does not know.
func ValidatingConfiguration(namespace, service string, caBundle []byte) *admissionv1.ValidatingWebhookConfiguration {
	path := ValidatePath
	exact := admissionv1.Exact
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	timeout := int32(10)
	return &admissionv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "validate.llmisvc.serving.kserve.io",
			ClientConfig: admissionv1.WebhookClientConfig{
				Service:  &admissionv1.ServiceReference{Namespace: namespace, Name: service, Path: &path},
				CABundle: caBundle,
			},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{
					APIGroups:   []string{v1alpha2.GroupVersion.Group},
					APIVersions: []string{v1alpha1.GroupVersion.Version, v1alpha2.GroupVersion.Version},
					Resources:   []string{"llminferenceservices", "llminferenceserviceconfigs"},
				},
			}},
			MatchPolicy:             &exact,
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

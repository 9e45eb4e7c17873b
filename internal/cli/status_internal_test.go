package cli

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// TestStatusSaysHowToInstallKuadrant: a service whose route is withheld
// because Kuadrant's AuthPolicy CRD is missing (auth on, the chart's
// default) gets, under the table, how to install Kuadrant and the explicit
// opt-out; a service withheld for another reason does not.
func TestStatusSaysHowToInstallKuadrant(t *testing.T) {
	svc := func(reason, message string) v1alpha2.LLMInferenceService {
		s := v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "chat"}}
		s.Status.Conditions = []metav1.Condition{
			{Type: v1alpha2.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message},
			{Type: "HTTPRoutesReady", Status: metav1.ConditionFalse, Reason: reason, Message: message},
		}
		return s
	}
	var out bytes.Buffer
	missing := svc("CRDMissing", "auth is on (--enable-auth) and Kuadrant's AuthPolicy CRD authpolicies.kuadrant.io (kuadrant.io/v1) is not established")
	if err := writeStatusTable(&out, []v1alpha2.LLMInferenceService{missing, missing}, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"helm install kuadrant-operator", "--set auth.enabled=false"} {
		if strings.Count(out.String(), want) != 1 {
			t.Errorf("status prints %q %d times, want once:\n%s", want, strings.Count(out.String(), want), out.String())
		}
	}
	out.Reset()
	other := svc("CRDMissing", "the CustomResourceDefinition inferencepools.inference.networking.k8s.io is not established")
	if err := writeStatusTable(&out, []v1alpha2.LLMInferenceService{other}, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Kuadrant") {
		t.Errorf("status speaks of Kuadrant for a service that does not wait for it:\n%s", out.String())
	}
}

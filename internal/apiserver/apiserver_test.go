package apiserver

import (
	"strings"
	"testing"
	"time"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestServiceAccountName(t *testing.T) {
	for user, want := range map[string]string{
		"alice":                     "alice-2bd806c97f0e00af",
		"Alice@Example.com":         "alice-example-com-f8db6f2f05fc7ed9",
		"system:serviceaccount:a:b": "system-serviceaccount-a-b-",
		"@@@":                       "user-",
		strings.Repeat("x", 100):    strings.Repeat("x", 46) + "-",
	} {
		got := ServiceAccountName(user)
		if !strings.HasPrefix(got, want) || len(got) > 63 {
			t.Errorf("ServiceAccountName(%q) = %q, want prefix %q and at most 63 characters", user, got, want)
		}
	}
	if ServiceAccountName("a.b") == ServiceAccountName("a-b") {
		t.Error("names that sanitize alike get the same ServiceAccount")
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/n/serviceaccounts/s/token":          "serviceaccounts/token",
		"/api/v1/namespaces/n/serviceaccounts/s":                "serviceaccounts",
		"/api/v1/namespaces/n/configmaps":                       "configmaps",
		"/apis/serving.kserve.io/v1alpha2/llminferenceservices": "llminferenceservices",
		"/apis/authorization.k8s.io/v1/subjectaccessreviews":    "subjectaccessreviews",
		"/api/v1/namespaces":                                    "namespaces",
		"/apis/serving.kserve.io/v1alpha2":                      "discovery",
		"/version":                                              "other",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %s, want %s", path, got, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	o := NewOptions()
	o.Tiers.ConfigMapNamespace = "Bad_NS"
	o.Tiers.NamespacePrefix = "UPPER-"
	o.TokenAudience = ""
	o.TokenMaxExpiration = 5 * time.Minute
	err := o.Validate()
	for _, want := range []string{"--tier-config-namespace \"Bad_NS\"", "--tier-namespace-prefix \"UPPER-\"", "--token-audience must not be empty", "--token-max-expiration 5m0s is shorter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	o = NewOptions()
	o.Tiers.ConfigMapNamespace = "opendatahub"
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

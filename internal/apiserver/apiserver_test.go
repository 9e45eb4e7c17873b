package apiserver

import (
	"strings"
	"testing"
	"time"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestResolveTier(t *testing.T) {
	tiers, err := parseTiers("ConfigMap ns/tiers", `
- {name: free, level: 0, groups: [system:authenticated]}
- {name: premium, level: 10, groups: [premium-users]}
- {name: partner, level: 10, groups: [partner-users]}
- {name: top, level: 20, groups: [top-users]}
`, "p-")
	if err != nil {
		t.Fatal(err)
	}
	c := &tierConfig{tiers: tiers}
	for groups, want := range map[string]string{
		"system:authenticated":                       "free",
		"system:authenticated,premium-users":         "premium",
		"partner-users,premium-users":                "premium", // tie: first listed
		"partner-users,top-users":                    "top",     // highest level, listed last
		"system:serviceaccounts:p-partner":           "partner", // the tier namespace's group
		"system:serviceaccounts:p-partner,top-users": "top",
		"nobody": "",
	} {
		got, err := c.resolve("p-", strings.Split(groups, ","))
		if got.Name != want || (want == "") != (err != nil) {
			t.Errorf("tier of %s: %q, %v; want %q", groups, got.Name, err, want)
		}
	}
}

func TestParseTiersErrors(t *testing.T) {
	for data, want := range map[string]string{
		"- name: [": "ConfigMap ns/t key tiers: not a list of",
		"{}":        "not a list of",
		"- name: a\n  groups: [x]\n  colour: red\n": `unknown field "colour"`,
		"[]":                                 "no tiers",
		"- level: 1":                         "tiers[0].name: must not be empty",
		"- name: a\n- name: a":               `tiers[1].name: "a" is also tiers[0]'s name`,
		"- name: A_b":                        `tiers[0].name: "A_b" does not make a namespace name with prefix "p-"`,
		"- name: a\n  groups: ['']":          "tiers[0].groups[0]: must not be empty",
		"- name: " + strings.Repeat("a", 62): "does not make a namespace name",
	} {
		if _, err := parseTiers("ConfigMap ns/t", data, "p-"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tiers %q: %v, want %q", data, err, want)
		}
	}
}

func TestParseTierAnnotation(t *testing.T) {
	for value, want := range map[string]string{
		`[]`:                 "[]",
		`["free","premium"]`: "[free premium]",
		`["premium"`:         "error",
		`"premium"`:          "error",
		`null`:               "error",
		`["free",""]`:        "error",
		`[1]`:                "error",
	} {
		tiers, err := parseTierAnnotation(value)
		got := "error"
		if err == nil {
			got = strings.Join(append([]string{"["}, strings.Join(tiers, " "), "]"), "")
		}
		if got != want {
			t.Errorf("annotation %s: %s (%v), want %s", value, got, err, want)
		}
	}
}

func TestServiceAccountName(t *testing.T) {
	for user, want := range map[string]string{
		"alice":                     "alice-522b276a",
		"Alice@Example.com":         "alice-example-com-022ffe69",
		"system:serviceaccount:a:b": "system-serviceaccount-a-b-",
		"@@@":                       "user-",
		strings.Repeat("x", 100):    strings.Repeat("x", 54) + "-",
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
	o.TierConfigNamespace = "Bad_NS"
	o.TierNamespacePrefix = "UPPER-"
	o.TokenAudience = ""
	o.TokenMaxExpiration = 5 * time.Minute
	err := o.Validate()
	for _, want := range []string{"--tier-config-namespace \"Bad_NS\"", "--tier-namespace-prefix \"UPPER-\"", "--token-audience must not be empty", "--token-max-expiration 5m0s is shorter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	o = NewOptions()
	o.TierConfigNamespace = "opendatahub"
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

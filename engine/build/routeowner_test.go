package build_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
)

// CheckRouteOwner admits the matches that stay within team-a/qwen's paths
// or name its models in the model header, and refuses each way out, naming
// the field.
func TestCheckRouteOwner(t *testing.T) {
	cases := map[string]struct {
		match string // one match, YAML
		want  string // "" admits; else the start of the error
	}{
		"own prefix":                {match: `{path: {type: PathPrefix, value: /team-a/qwen}}`},
		"below own prefix":          {match: `{path: {type: Exact, value: /team-a/qwen/v1/chat/completions}}`},
		"own prefix, trailing /":    {match: `{path: {value: /team-a/qwen/}}`},
		"publisher path":            {match: `{path: {value: /publishers/team-a/models/Qwen/Qwen2.5}}`},
		"publisher path of adapter": {match: `{path: {value: /publishers/team-a/models/sql-lora/v1/completions}}`},
		"shared path, own header":   {match: `{path: {type: Exact, value: /v1/completions}, headers: [{name: X-Gateway-Model-Name, value: publishers/team-a/models/Qwen/Qwen2.5}]}`},
		"catch-all, own header":     {match: `{path: {value: /}, headers: [{type: Exact, name: x-gateway-model-name, value: publishers/team-a/models/sql-lora}]}`},
		"no path, own header":       {match: `{headers: [{name: X-Gateway-Model-Name, value: publishers/team-a/models/Qwen/Qwen2.5}]}`},
		"regex path, own header":    {match: `{path: {type: RegularExpression, value: /v1/.*}, headers: [{name: X-Gateway-Model-Name, value: publishers/team-a/models/Qwen/Qwen2.5}]}`},
		"other headers are free":    {match: `{path: {value: /team-a/qwen}, headers: [{type: RegularExpression, name: X-Tenant, value: ".*"}]}`},

		"other namespace's path": {
			match: `{path: {type: Exact, value: /team-b/qwen/v1/chat/completions}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-b/qwen/v1/chat/completions" (Exact) lies outside`,
		},
		"neighbour sharing a prefix": {
			match: `{path: {type: PathPrefix, value: /team-a/qwen-x}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-a/qwen-x" (PathPrefix) lies outside`,
		},
		"namespace prefix": {
			match: `{path: {value: /team-a}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-a" (PathPrefix) lies outside`,
		},
		"other namespace's publisher path": {
			match: `{path: {value: /publishers/team-b/models/Qwen/Qwen2.5}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden:`,
		},
		"another model's publisher path": {
			match: `{path: {value: /publishers/team-a/models/Qwen/Qwen2.5-other}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden:`,
		},
		"dot segments": {
			match: `{path: {value: /team-a/qwen/../../team-b/x}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-a/qwen/../../team-b/x": it contains a dot segment`,
		},
		"encoded slash": {
			match: `{path: {value: /team-a/qwen%2F..%2F..%2Fteam-b}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-a/qwen%2F..%2F..%2Fteam-b": it contains an encoded slash`,
		},
		"percent-encoded other namespace": {
			match: `{path: {value: /team-%62/qwen}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-%62/qwen" (PathPrefix) lies outside`,
		},
		"no path": {
			match: `{method: POST}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path: Forbidden: path "/" (PathPrefix) lies outside`,
		},
		"catch-all": {
			match: `{path: {type: PathPrefix, value: /}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/" (PathPrefix) lies outside`,
		},
		"regex path": {
			match: `{path: {type: RegularExpression, value: "/team-a/qwen/.*"}}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/team-a/qwen/.*" (RegularExpression): odh-serving cannot prove`,
		},
		"other namespace's model header": {
			match: `{path: {type: Exact, value: /v1/chat/completions}, headers: [{name: X-Gateway-Model-Name, value: publishers/team-b/models/Qwen/Qwen2.5}]}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].headers[0].value: Forbidden: X-Gateway-Model-Name "publishers/team-b/models/Qwen/Qwen2.5" names a model outside`,
		},
		"model header in other case": {
			match: `{path: {value: /team-a/qwen}, headers: [{name: x-GATEWAY-model-NAME, value: publishers/team-b/models/m}]}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].headers[0].value: Forbidden:`,
		},
		"plain model name in the header": {
			match: `{path: {type: Exact, value: /v1/completions}, headers: [{name: X-Gateway-Model-Name, value: Qwen/Qwen2.5}]}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].headers[0].value: Forbidden: X-Gateway-Model-Name "Qwen/Qwen2.5" names a model outside`,
		},
		"regex model header": {
			match: `{path: {value: /team-a/qwen}, headers: [{type: RegularExpression, name: X-Gateway-Model-Name, value: "publishers/team-a/models/.*"}]}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].headers[0].type: Forbidden: a RegularExpression match on X-Gateway-Model-Name`,
		},
		"own namespace, another model, shared path": {
			match: `{path: {type: Exact, value: /v1/completions}, headers: [{name: X-Gateway-Model-Name, value: publishers/team-a/models/other}]}`,
			want:  `spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: path "/v1/completions" (Exact) lies outside`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			spec := routeSpec(t, `{hostnames: [], rules: [{matches: [`+c.match+`]}]}`)
			err := build.CheckRouteOwner("team-a", "qwen", spec, nil)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("admitted; want %q", c.want)
			case c.want != "" && !strings.HasPrefix(err.Error(), c.want) && !strings.Contains(err.Error(), "["+c.want):
				t.Errorf("error:\n  %v\nwant it to start with:\n  %s", err, c.want)
			}
		})
	}
}

// A rule without matches matches every request; hostnames must be allowed;
// routes the user brings (refs) are not the engine's to check.
func TestCheckRouteOwnerRulesAndHostnames(t *testing.T) {
	if err := build.CheckRouteOwner("team-a", "qwen", routeSpec(t, `{rules: [{}]}`), nil); err == nil ||
		!strings.HasPrefix(err.Error(), "spec.router.route.http.spec.rules[0].matches: Forbidden: a rule without matches matches every request") {
		t.Errorf("a rule without matches: %v", err)
	}
	hosts := routeSpec(t, `{hostnames: [qwen.team-a.example.com, "*.team-a.example.com", team-a.example.com], rules: [{matches: [{path: {value: /team-a/qwen}}]}]}`)
	for _, c := range []struct {
		allowed []string
		want    string
	}{
		{nil, `spec.router.route.http.spec.hostnames[0]: Forbidden: hostname "qwen.team-a.example.com" is not one the platform allows routes to claim (allowed: none)`},
		{[]string{"*.team-a.example.com"}, `spec.router.route.http.spec.hostnames[2]: Forbidden: hostname "team-a.example.com"`},
		{[]string{"*.team-a.example.com", "team-a.example.com"}, ""},
		{[]string{"*.example.com"}, ""},
		{[]string{"qwen.team-a.example.com", "team-a.example.com"}, `spec.router.route.http.spec.hostnames[1]: Forbidden: hostname "*.team-a.example.com"`},
		{[]string{"*.b.example.com", "*.team-a.example.com.evil", "example.com"}, `spec.router.route.http.spec.hostnames[0]`},
	} {
		err := build.CheckRouteOwner("team-a", "qwen", hosts, c.allowed)
		if got := errString(err); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("allowed %v: %q; want %q", c.allowed, got, c.want)
		}
	}
	refs := routeSpec(t, `{rules: [{matches: [{path: {value: /}}]}]}`)
	refs.Router.Route.HTTP.Refs = []corev1.LocalObjectReference{{Name: "mine"}}
	if err := build.CheckRouteOwner("team-a", "qwen", refs, nil); err != nil {
		t.Errorf("with refs the spec is not built: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// routeSpec is team-a/qwen's merged spec with route as its managed route:
// model Qwen/Qwen2.5 and the LoRA adapter sql-lora.
func routeSpec(t *testing.T, route string) *v1alpha2.LLMInferenceServiceSpec {
	t.Helper()
	spec := &v1alpha2.LLMInferenceServiceSpec{}
	y := `{model: {uri: hf://Qwen/Qwen2.5, name: Qwen/Qwen2.5, lora: {adapters: [{name: sql-lora, uri: hf://t/sql}]}}, router: {route: {http: {spec: ` + route + `}}}}`
	if err := yaml.UnmarshalStrict([]byte(y), spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

package build

import (
	"fmt"
	"regexp"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// Model-based routing: requests to the shared /v1/... paths reach the
// service whose model the gateway names in a header.
const (
	// AnnotationModelBasedRouting turns the header rules of the route on
	// when it is "true".
	AnnotationModelBasedRouting = "serving.kserve.io/model-based-routing-enabled"
	// ModelHeader carries publishers/<namespace>/models/<model>; a gateway
	// extension that reads the request body sets it.
	ModelHeader = "X-Gateway-Model-Name"
)

// Gateway API's limits on an HTTPRoute (the CRD's maxItems).
const (
	maxRouteRules        = 16
	maxRuleMatches       = 64
	maxRouteMatchesTotal = 128
)

// routePath is Gateway API's pattern for a path match value.
var routePath = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)

// ModelBasedRouting reports whether a service asks for the header rules:
// its own annotation, or, as KServe reads it, the annotation its merged
// spec gives the main workload's pods (spec.annotations).
func ModelBasedRouting(annotations map[string]string, spec *v1alpha2.LLMInferenceServiceSpec) bool {
	return annotations[AnnotationModelBasedRouting] == "true" || spec.Annotations[AnnotationModelBasedRouting] == "true"
}

// modelRouting keeps or drops the route's model header matches. Without
// the annotation every match on ModelHeader goes, and a rule left with no
// match goes with it. With it, each match on ModelHeader is followed, after
// the rule's own matches, by a copy per LoRA adapter (sorted by name) that
// names the adapter instead: an adapter is served by the same pods as its
// model.
func (b *builder) modelRouting(rules []gatewayv1.HTTPRouteRule) []gatewayv1.HTTPRouteRule {
	if !ModelBasedRouting(b.svc.Annotations, b.spec) {
		var kept []gatewayv1.HTTPRouteRule
		for _, r := range rules {
			var matches []gatewayv1.HTTPRouteMatch
			for _, m := range r.Matches {
				if !matchesModelHeader(m) {
					matches = append(matches, m)
				}
			}
			if len(matches) == 0 && len(r.Matches) > 0 {
				continue
			}
			r.Matches = matches
			kept = append(kept, r)
		}
		return kept
	}
	if len(b.lora) == 0 {
		return rules
	}
	for i := range rules {
		var extra []gatewayv1.HTTPRouteMatch
		for _, m := range rules[i].Matches {
			if !matchesModelHeader(m) {
				continue
			}
			for _, a := range b.lora {
				am := *m.DeepCopy()
				for h := range am.Headers {
					if isModelHeader(am.Headers[h]) {
						am.Headers[h].Value = PublisherName(b.svc.Namespace, a.name)
					}
				}
				extra = append(extra, am)
			}
		}
		rules[i].Matches = append(rules[i].Matches, extra...)
	}
	return rules
}

func matchesModelHeader(m gatewayv1.HTTPRouteMatch) bool {
	for _, h := range m.Headers {
		if isModelHeader(h) {
			return true
		}
	}
	return false
}

func isModelHeader(h gatewayv1.HTTPHeaderMatch) bool {
	return strings.EqualFold(string(h.Name), ModelHeader)
}

// checkRoute refuses a route the API server would refuse for its size
// or its paths, saying why: each LoRA adapter adds a match per header match
// of the route, and the publisher paths carry spec.model.name.
func (b *builder) checkRoute(rules []gatewayv1.HTTPRouteRule) error {
	why := ""
	if len(b.lora) > 0 && ModelBasedRouting(b.svc.Annotations, b.spec) {
		why = fmt.Sprintf("; with model-based routing each of the %d LoRA adapters (spec.model.lora.adapters) adds a header match per model header match", len(b.lora))
	}
	if len(rules) > maxRouteRules {
		return fmt.Errorf("spec.router.route.http.spec.rules: %d rules; Gateway API allows %d per HTTPRoute", len(rules), maxRouteRules)
	}
	total := 0
	for i, r := range rules {
		for j, m := range r.Matches {
			if m.Path != nil && m.Path.Value != nil && !routePath.MatchString(*m.Path.Value) {
				return fmt.Errorf("spec.router.route.http.spec.rules[%d].matches[%d].path.value %q: not a valid HTTP path (the preset's paths carry the namespace, the service name and spec.model.name)", i, j, *m.Path.Value)
			}
		}
		if len(r.Matches) > maxRuleMatches {
			return fmt.Errorf("spec.router.route.http.spec.rules[%d].matches: the route would have %d matches in this rule; Gateway API allows %d%s", i, len(r.Matches), maxRuleMatches, why)
		}
		total += len(r.Matches)
	}
	if total > maxRouteMatchesTotal {
		return fmt.Errorf("spec.router.route.http.spec.rules: the route would have %d matches; Gateway API allows %d per HTTPRoute%s", total, maxRouteMatchesTotal, why)
	}
	return nil
}

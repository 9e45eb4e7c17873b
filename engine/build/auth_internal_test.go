package build

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestStripCredentials: with auth on, every rule removes Authorization
// exactly once, in its own RequestHeaderModifier when it has one (its
// other changes kept), in a new one otherwise; a remove list already at
// Gateway API's limit is an error naming the field; auth off changes
// nothing.
func TestStripCredentials(t *testing.T) {
	modifier := func(f *gatewayv1.HTTPHeaderFilter) gatewayv1.HTTPRouteFilter {
		return gatewayv1.HTTPRouteFilter{Type: gatewayv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: f}
	}
	rules := func() []gatewayv1.HTTPRouteRule {
		return []gatewayv1.HTTPRouteRule{
			{},
			{Filters: []gatewayv1.HTTPRouteFilter{modifier(&gatewayv1.HTTPHeaderFilter{Set: []gatewayv1.HTTPHeader{{Name: "X-Team", Value: "a"}}, Remove: []string{"X-Debug"}})}},
			{Filters: []gatewayv1.HTTPRouteFilter{modifier(&gatewayv1.HTTPHeaderFilter{Remove: []string{"authorization"}})}},
		}
	}
	on := &builder{opts: Options{Auth: true}}
	got := rules()
	if err := on.stripCredentials(got); err != nil {
		t.Fatal(err)
	}
	removes := func(r gatewayv1.HTTPRouteRule) (lists [][]string) {
		for _, f := range r.Filters {
			if f.Type == gatewayv1.HTTPRouteFilterRequestHeaderModifier {
				lists = append(lists, f.RequestHeaderModifier.Remove)
			}
		}
		return lists
	}
	for i, want := range [][][]string{{{"Authorization"}}, {{"X-Debug", "Authorization"}}, {{"authorization"}}} {
		if g := removes(got[i]); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("rule %d: RequestHeaderModifier removes %v, want %v", i, g, want)
		}
	}
	if set := got[1].Filters[0].RequestHeaderModifier.Set; len(set) != 1 || set[0].Name != "X-Team" {
		t.Errorf("rule 1: the filter's own set lost: %v", set)
	}

	off := &builder{opts: Options{}}
	untouched := rules()
	if err := off.stripCredentials(untouched); err != nil || len(untouched[0].Filters) != 0 || !slices.Equal(untouched[1].Filters[0].RequestHeaderModifier.Remove, []string{"X-Debug"}) {
		t.Errorf("auth off: %v, rules %+v; want them unchanged", err, untouched)
	}

	full := make([]string, maxHeaderRemovals)
	for i := range full {
		full[i] = fmt.Sprintf("X-Header-%d", i)
	}
	err := on.stripCredentials([]gatewayv1.HTTPRouteRule{{}, {Filters: []gatewayv1.HTTPRouteFilter{modifier(&gatewayv1.HTTPHeaderFilter{Remove: full})}}})
	if err == nil || !strings.Contains(err.Error(), "spec.router.route.http.spec.rules[1].filters[0].requestHeaderModifier.remove") {
		t.Errorf("a remove list at the limit: %v; want an error naming the field", err)
	}
}

package controller

import (
	"slices"
	"testing"
)

// TestAuthPolicyWantedWithAuth: the controller watches Kuadrant's
// AuthPolicy CRD only with auth on, and not in static mode, where Helm
// renders the policies.
func TestAuthPolicyWantedWithAuth(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		want bool
	}{
		"auth off":             {opts: Options{}, want: false},
		"auth on":              {opts: func() Options { o := Options{}; o.Auth = true; return o }(), want: true},
		"auth on, static mode": {opts: func() Options { o := Options{StaticMode: true}; o.Auth = true; return o }(), want: false},
	} {
		t.Run(name, func(t *testing.T) {
			e := &enabler{r: &Reconciler{opts: tc.opts.withDefaults()}}
			if got := slices.Contains(e.wanted(), crdAuthPolicy); got != tc.want {
				t.Errorf("wanted() has %s: %v, want %v", crdAuthPolicy, got, tc.want)
			}
		})
	}
}

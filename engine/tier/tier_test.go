package tier_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opendatahub-io/odh-serving/engine/tier"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

const odhTiers = `
- name: free
  displayName: Free Tier
  description: Everyone
  level: 0
  groups: [system:authenticated]
- name: premium
  displayName: Premium Tier
  level: 1
  groups: [premium-users]
- name: enterprise
  level: 2
  groups: [enterprise-users, admins]
- name: partner
  level: 2
  groups: [admins]
`

func mustParse(t *testing.T, data string) *tier.Config {
	t.Helper()
	c, err := tier.Parse(data, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseBad(t *testing.T) {
	tests := map[string]struct{ data, prefix, want string }{
		"not a list":      {data: "name: free", want: "key tiers: not a YAML list"},
		"no tiers":        {data: "[]", want: "key tiers: no tiers"},
		"nothing":         {data: "", want: "key tiers: no tiers"},
		"misspelt field":  {data: "- name: free\n  group: [a]", want: `unknown field "group"`},
		"level not a int": {data: "- name: free\n  level: high", want: "key tiers: not a YAML list"},
		"no name":         {data: "- level: 1", want: "tiers[0]: name is required"},
		"duplicate":       {data: "- name: free\n- name: free", want: `tiers[1] ("free"): the name is also tiers[0]'s`},
		"bad namespace":   {data: "- name: Free_Tier", want: `tiers[0] ("Free_Tier"): the tier's namespace "maas-default-gateway-tier-Free_Tier" is not a valid name`},
		"long namespace":  {data: "- name: x", prefix: strings.Repeat("p", 63), want: "must be no more than 63 characters"},
		"empty group":     {data: "- name: free\n  groups: [\"\"]", want: `tiers[0] ("free"): groups[0] is empty`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := tier.Parse(tc.data, tc.prefix)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	c := mustParse(t, odhTiers)
	if got, want := c.Namespace("premium"), "maas-default-gateway-tier-premium"; got != want {
		t.Errorf("Namespace = %q, want %q", got, want)
	}
	if got, want := c.ServiceAccountGroup("free"), "system:serviceaccounts:maas-default-gateway-tier-free"; got != want {
		t.Errorf("ServiceAccountGroup = %q, want %q", got, want)
	}
	other, err := tier.Parse("- name: gold", "acme-tier-")
	if err != nil {
		t.Fatal(err)
	}
	if got := other.Namespace("gold"); got != "acme-tier-gold" {
		t.Errorf("Namespace with a prefix = %q", got)
	}
}

func TestResolve(t *testing.T) {
	c := mustParse(t, odhTiers)
	tests := map[string]struct {
		groups []string
		want   string // "" for no tier
	}{
		"everyone is free":                     {[]string{"system:authenticated"}, "free"},
		"the highest level wins":               {[]string{"system:authenticated", "premium-users"}, "premium"},
		"higher level listed later still wins": {[]string{"enterprise-users", "premium-users"}, "enterprise"},
		"a tie goes to the first listed":       {[]string{"admins"}, "enterprise"},
		"a tier's ServiceAccounts are in it":   {[]string{"system:serviceaccounts", "system:serviceaccounts:maas-default-gateway-tier-premium"}, "premium"},
		"no group":                             {nil, ""},
		"a group of no tier":                   {[]string{"nobody"}, ""},
		"another namespace's ServiceAccounts":  {[]string{"system:serviceaccounts:default"}, ""},
		"a group named like a tier is not one": {[]string{"premium"}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := c.Resolve(tc.groups)
			if ok != (tc.want != "") || got.Name != tc.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tc.groups, got.Name, ok, tc.want)
			}
		})
	}
}

// TestGrant: what an annotation grants, the one decision of the
// controller's RoleBindings and the API server's models. Bad input fails
// closed: a malformed value grants nothing, an unknown name grants
// nothing while the known names still grant their tiers.
func TestGrant(t *testing.T) {
	c := mustParse(t, odhTiers)
	tests := map[string]struct {
		annotations map[string]string
		published   bool
		all         bool
		want        []string
		unknown     []string
		err         string
	}{
		"no annotation":       {annotations: map[string]string{"other": "x"}},
		"every tier":          {annotations: map[string]string{tier.AnnotationTiers: "[]"}, published: true, all: true, want: []string{"free", "premium", "enterprise", "partner"}},
		"in the config order": {annotations: map[string]string{tier.AnnotationTiers: `["premium","free","premium"]`}, published: true, want: []string{"free", "premium"}},
		"unknown among known": {annotations: map[string]string{tier.AnnotationTiers: `["premium","gold","silver","gold"]`}, published: true,
			want: []string{"premium"}, unknown: []string{"gold", "silver"},
			err: `annotation alpha.maas.opendatahub.io/tiers: "[\"premium\",\"gold\",\"silver\",\"gold\"]" names unknown tier "gold", "silver"; the tiers are "free", "premium", "enterprise", "partner"`},
		"only unknown": {annotations: map[string]string{tier.AnnotationTiers: `["gold"]`}, published: true, unknown: []string{"gold"}, err: `names unknown tier "gold"`},
		"malformed":    {annotations: map[string]string{tier.AnnotationTiers: "premium"}, published: true, err: `annotation alpha.maas.opendatahub.io/tiers: "premium" is not a JSON list`},
		"truncated":    {annotations: map[string]string{tier.AnnotationTiers: `["premium"`}, published: true, err: `"[\"premium\"" is not a JSON list`},
		"null":         {annotations: map[string]string{tier.AnnotationTiers: "null"}, published: true, err: "is not a JSON list"},
		"empty":        {annotations: map[string]string{tier.AnnotationTiers: ""}, published: true, err: "is not a JSON list"},
		"not names":    {annotations: map[string]string{tier.AnnotationTiers: `["premium",1]`}, published: true, err: "is not a JSON list"},
		"empty name":   {annotations: map[string]string{tier.AnnotationTiers: `["free",""]`}, published: true, err: `"[\"free\",\"\"]": item 1 is an empty tier name`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := c.Grant(tier.ReadAnnotation(tc.annotations))
			if g.Published != tc.published || g.All != tc.all {
				t.Errorf("published, all = %v, %v; want %v, %v", g.Published, g.All, tc.published, tc.all)
			}
			// A bad annotation still grants something (or nothing): check
			// the grant whether or not an error is wanted.
			golden.ErrorCase(t, g.Err, tc.err)
			if d := cmp.Diff(tc.want, g.Names(), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("tiers (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.unknown, g.Unknown); d != "" {
				t.Errorf("unknown (-want +got):\n%s", d)
			}
			for _, tierName := range c.Names() {
				if got, want := g.Allows(tierName), slices.Contains(tc.want, tierName); got != want {
					t.Errorf("Allows(%s) = %v, want %v", tierName, got, want)
				}
			}
		})
	}
}

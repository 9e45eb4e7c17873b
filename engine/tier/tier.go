package tier

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// ODH's names, and the defaults of the flags.
const (
	// AnnotationTiers publishes a service to MaaS: a JSON list of tier
	// names, where [] is every tier. Without it the service is in no tier.
	AnnotationTiers = "alpha.maas.opendatahub.io/tiers"
	// ConfigMapName and ConfigMapKey hold the tier list.
	ConfigMapName = "tier-to-group-mapping"
	ConfigMapKey  = "tiers"
	// DefaultNamespacePrefix is put before a tier's name to name its
	// namespace: ODH's <instance>-tier-<name>, for its default instance
	// (the gateway maas-default-gateway).
	DefaultNamespacePrefix = "maas-default-gateway-tier-"
	// ServiceAccountGroupPrefix starts the group of every ServiceAccount of
	// a namespace: system:serviceaccounts:<namespace>.
	ServiceAccountGroupPrefix = "system:serviceaccounts:"
)

// Tier is one entry of the tier list, in ODH's format.
type Tier struct {
	// Name names the tier in the annotation and its namespace.
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
	// Level ranks the tiers: a caller in several gets the highest.
	Level int `json:"level"`
	// Groups are the user groups in the tier.
	Groups []string `json:"groups,omitempty"`
}

// Config is the tier list and where the tiers' namespaces are.
type Config struct {
	// Tiers in the order listed, which breaks ties of level.
	Tiers []Tier
	// NamespacePrefix is put before a tier's name to name its namespace.
	NamespacePrefix string
}

// Parse reads the tier list, the YAML under the ConfigMap's key tiers, and
// checks it: there is a tier, every tier has a unique name that makes a
// valid namespace name after prefix, and no field is misspelt. Errors wrap
// ErrMalformed, ErrNoTiers or ErrInvalidTiers and name the tier by index
// and name. FromConfigMap reads the ConfigMap, and names it in its errors.
func Parse(data, prefix string) (*Config, error) {
	if prefix == "" {
		prefix = DefaultNamespacePrefix
	}
	var tiers []Tier
	if err := yaml.UnmarshalStrict([]byte(data), &tiers); err != nil {
		return nil, fmt.Errorf("key %s: %w: %w", ConfigMapKey, ErrMalformed, err)
	}
	if len(tiers) == 0 {
		return nil, fmt.Errorf("key %s: %w", ConfigMapKey, ErrNoTiers)
	}
	var errs []error
	seen := map[string]int{}
	for i, t := range tiers {
		where := fmt.Sprintf("tiers[%d] (%q)", i, t.Name)
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("tiers[%d]: name is required", i))
			continue
		}
		if j, dup := seen[t.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: the name is also tiers[%d]'s", where, j))
		}
		seen[t.Name] = i
		if msgs := utilvalidation.IsDNS1123Label(prefix + t.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: the tier's namespace %q is not a valid name: %s", where, prefix+t.Name, strings.Join(msgs, "; ")))
		}
		for k, g := range t.Groups {
			if strings.TrimSpace(g) == "" {
				errs = append(errs, fmt.Errorf("%s: groups[%d] is empty", where, k))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("key %s: %w: %w", ConfigMapKey, ErrInvalidTiers, errors.Join(errs...))
	}
	return &Config{Tiers: tiers, NamespacePrefix: prefix}, nil
}

// Namespace is the namespace of the tier named name.
func (c *Config) Namespace(name string) string { return c.NamespacePrefix + name }

// ServiceAccountGroup is the group of every ServiceAccount in the tier's
// namespace: the tokens minted for the tier authenticate in it.
func (c *Config) ServiceAccountGroup(name string) string {
	return ServiceAccountGroupPrefix + c.Namespace(name)
}

// Lookup returns the tier named name.
func (c *Config) Lookup(name string) (Tier, bool) {
	i := slices.IndexFunc(c.Tiers, func(t Tier) bool { return t.Name == name })
	if i < 0 {
		return Tier{}, false
	}
	return c.Tiers[i], true
}

// Names are the tiers' names, in order.
func (c *Config) Names() []string {
	out := make([]string, len(c.Tiers))
	for i, t := range c.Tiers {
		out[i] = t.Name
	}
	return out
}

// Resolve returns the tier of a caller in groups: of the tiers that list
// one of the groups, or whose namespace's ServiceAccount group is one of
// them, the one with the highest level; on a tie, the first listed. It
// returns false when no tier matches.
func (c *Config) Resolve(groups []string) (Tier, bool) {
	best := -1
	for i, t := range c.Tiers {
		in := slices.Contains(groups, c.ServiceAccountGroup(t.Name)) ||
			slices.ContainsFunc(t.Groups, func(g string) bool { return slices.Contains(groups, g) })
		if in && (best < 0 || t.Level > c.Tiers[best].Level) {
			best = i
		}
	}
	if best < 0 {
		return Tier{}, false
	}
	return c.Tiers[best], true
}

// Annotation is a service's tiers annotation, read once. The engine reads
// it to build a service's RoleBindings, the MaaS API server keeps it in its
// model cache, and both ask Config.Grant what it grants: the two cannot
// disagree on what a value means.
type Annotation struct {
	// Published is true when the service carries AnnotationTiers.
	Published bool
	// Value is the annotation's value as written.
	Value string
	// Names are the tier names the value lists, without repeats; empty,
	// not nil, for [] (every tier).
	Names []string
	// Err, when set, says why the value is not a JSON list of tier
	// names, naming the annotation and the value. Such a value grants
	// nothing.
	Err error
}

// ReadAnnotation reads AnnotationTiers from a service's annotations.
func ReadAnnotation(annotations map[string]string) Annotation {
	value, ok := annotations[AnnotationTiers]
	if !ok {
		return Annotation{}
	}
	a := Annotation{Published: true, Value: value}
	var names []string
	if err := json.Unmarshal([]byte(value), &names); err != nil || names == nil {
		a.Err = fmt.Errorf("annotation %s: %q is not a JSON list of tier names, e.g. [\"free\",\"premium\"] or [] for every tier", AnnotationTiers, value)
		return a
	}
	a.Names = make([]string, 0, len(names))
	for i, n := range names {
		if n == "" {
			a.Names, a.Err = nil, fmt.Errorf("annotation %s: %q: item %d is an empty tier name", AnnotationTiers, value, i)
			return a
		}
		if !slices.Contains(a.Names, n) {
			a.Names = append(a.Names, n)
		}
	}
	return a
}

// Grant is what a tiers annotation grants under a tier list: which tiers'
// tokens may call the service (the controller's RoleBindings) and which
// tiers' users see it in models (the API server). Bad input fails closed:
//   - a value that is not a JSON list of tier names grants nothing;
//   - a name the list lacks grants nothing; the names the list has still
//     grant their tiers. A tier taken out of the list must not take a
//     service away from the other tiers that name it, and a misspelt name
//     grants no one more than the annotation asked for.
//
// Err says which, naming the annotation and its value.
type Grant struct {
	// Published is true when the service carries AnnotationTiers.
	Published bool
	// Tiers may call the service, in the tier list's order.
	Tiers []Tier
	// All is true for [] (every tier, those added later too).
	All bool
	// Unknown are the names the list lacks, in the annotation's order.
	Unknown []string
	// Err is the annotation's Err, or names the Unknown tiers.
	Err error
}

// Grant decides what a tiers annotation grants under c.
func (c *Config) Grant(a Annotation) Grant {
	g := Grant{Published: a.Published, Err: a.Err}
	if !a.Published || a.Err != nil {
		return g
	}
	if len(a.Names) == 0 {
		g.All, g.Tiers = true, slices.Clone(c.Tiers)
		return g
	}
	for _, t := range c.Tiers {
		if slices.Contains(a.Names, t.Name) {
			g.Tiers = append(g.Tiers, t)
		}
	}
	for _, n := range a.Names {
		if _, ok := c.Lookup(n); !ok {
			g.Unknown = append(g.Unknown, n)
		}
	}
	if len(g.Unknown) > 0 {
		g.Err = fmt.Errorf("annotation %s: %q names unknown tier %s; the tiers are %s", AnnotationTiers, a.Value,
			quoteAll(g.Unknown), quoteAll(c.Names()))
	}
	return g
}

// Names are the names of the tiers granted, in the tier list's order.
func (g Grant) Names() []string {
	out := make([]string, len(g.Tiers))
	for i, t := range g.Tiers {
		out[i] = t.Name
	}
	return out
}

// Allows reports whether the tier named name is granted.
func (g Grant) Allows(name string) bool {
	return slices.ContainsFunc(g.Tiers, func(t Tier) bool { return t.Name == name })
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

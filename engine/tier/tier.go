package tier

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
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
// valid namespace name after prefix, and no field is misspelt. Errors name the tier by index
// and name.
func Parse(data, prefix string) (*Config, error) {
	if prefix == "" {
		prefix = DefaultNamespacePrefix
	}
	var tiers []Tier
	if err := yaml.UnmarshalStrict([]byte(data), &tiers); err != nil {
		return nil, fmt.Errorf("key %s: not a YAML list of {name, displayName, description, level, groups}: %w", ConfigMapKey, err)
	}
	if len(tiers) == 0 {
		return nil, fmt.Errorf("key %s: no tiers", ConfigMapKey)
	}
	var errs []error
	seen := map[string]int{}
	for i, t := range tiers {
		where := fmt.Sprintf("key %s: tiers[%d] (%q)", ConfigMapKey, i, t.Name)
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("key %s: tiers[%d]: name is required", ConfigMapKey, i))
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
	if err := errors.Join(errs...); err != nil {
		return nil, err
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

// ParseAnnotation reads the value of AnnotationTiers: a JSON list of
// names. An empty list is every tier; the result is then empty but not
// nil.
func ParseAnnotation(value string) ([]string, error) {
	var names []string
	if err := json.Unmarshal([]byte(value), &names); err != nil || names == nil {
		return nil, fmt.Errorf("annotation %s: %q is not a JSON list of tier names, e.g. [\"free\",\"premium\"] or [] for every tier", AnnotationTiers, value)
	}
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("annotation %s: item %d is an empty tier name", AnnotationTiers, i)
		}
	}
	return names, nil
}

// Published returns the tiers a service with annotations is published to,
// in the tier list's order, and whether it is published at all (it
// carries AnnotationTiers). A malformed annotation or a name that is not a
// tier is an error naming the annotation.
func (c *Config) Published(annotations map[string]string) ([]Tier, bool, error) {
	value, ok := annotations[AnnotationTiers]
	if !ok {
		return nil, false, nil
	}
	names, err := ParseAnnotation(value)
	if err != nil {
		return nil, true, err
	}
	if len(names) == 0 {
		return slices.Clone(c.Tiers), true, nil
	}
	var unknown []string
	for _, n := range names {
		if _, ok := c.Lookup(n); !ok && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, true, fmt.Errorf("annotation %s: unknown tier %s; the tiers are %s", AnnotationTiers,
			quoteAll(unknown), quoteAll(c.Names()))
	}
	var out []Tier
	for _, t := range c.Tiers {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out, true, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Flags say where the tier list is and how tiers' namespaces are named:
// the controller and the MaaS API server take the same flags, so the
// chart passes both the same values.
type Flags struct {
	// ConfigMapNamespace holds the ConfigMap; empty: the caller's system
	// namespace.
	ConfigMapNamespace string
	// ConfigMapName names it. Default: tier-to-group-mapping.
	ConfigMapName string
	// NamespacePrefix names the tiers' namespaces. Default:
	// maas-default-gateway-tier-.
	NamespacePrefix string
}

// AddFlags registers --tier-config-namespace, --tier-config-name and
// --tier-namespace-prefix on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.ConfigMapNamespace, "tier-config-namespace", "",
		"namespace of the MaaS tier ConfigMap; default: the system namespace")
	fs.StringVar(&f.ConfigMapName, "tier-config-name", ConfigMapName,
		"name of the MaaS tier ConfigMap (key "+ConfigMapKey+": a YAML list of {name, displayName, description, level, groups})")
	fs.StringVar(&f.NamespacePrefix, "tier-namespace-prefix", DefaultNamespacePrefix,
		"a MaaS tier's namespace is this prefix and the tier's name")
}

// Defaults returns f with its defaults set, the ConfigMap's namespace
// defaulting to systemNamespace.
func (f Flags) Defaults(systemNamespace string) Flags {
	if f.ConfigMapNamespace == "" {
		f.ConfigMapNamespace = systemNamespace
	}
	if f.ConfigMapName == "" {
		f.ConfigMapName = ConfigMapName
	}
	if f.NamespacePrefix == "" {
		f.NamespacePrefix = DefaultNamespacePrefix
	}
	return f
}

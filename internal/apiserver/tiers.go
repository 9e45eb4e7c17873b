package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// Tier is one entry of the tier ConfigMap, in ODH's format.
type Tier struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"displayName,omitempty"`
	Description string   `json:"description,omitempty"`
	Level       int64    `json:"level,omitempty"`
	Groups      []string `json:"groups,omitempty"`
}

// tierConfig is a parsed tier ConfigMap, or why it could not be used.
type tierConfig struct {
	tiers []Tier
	known map[string]bool
	err   error
}

// errNoTier is resolve's answer for groups that no tier lists.
var errNoTier = errors.New("no tier lists any of the groups")

// resolve returns the tier with the highest level among those that list
// one of groups; on a tie, the first listed. A tier also lists the group
// of its namespace's ServiceAccounts, so a minted token's identity
// resolves to the tier it was minted for.
func (c *tierConfig) resolve(prefix string, groups []string) (Tier, error) {
	if c.err != nil {
		return Tier{}, c.err
	}
	best := -1
	for i, t := range c.tiers {
		if best >= 0 && t.Level <= c.tiers[best].Level {
			continue
		}
		if slices.ContainsFunc(groups, func(g string) bool {
			return slices.Contains(t.Groups, g) || g == serviceaccount.MakeNamespaceGroupName(prefix+t.Name)
		}) {
			best = i
		}
	}
	if best < 0 {
		return Tier{}, errNoTier
	}
	return c.tiers[best], nil
}

// parseTiers reads the tiers of a ConfigMap's "tiers" key. what names the
// ConfigMap in errors.
func parseTiers(what, data, prefix string) ([]Tier, error) {
	var tiers []Tier
	if err := yaml.UnmarshalStrict([]byte(data), &tiers); err != nil {
		return nil, fmt.Errorf("%s key %s: not a list of {name, displayName, description, level, groups}: %w", what, TierConfigKey, err)
	}
	if len(tiers) == 0 {
		return nil, fmt.Errorf("%s key %s: no tiers", what, TierConfigKey)
	}
	seen := map[string]int{}
	var errs []error
	for i, t := range tiers {
		field := fmt.Sprintf("%s key %s: tiers[%d]", what, TierConfigKey, i)
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: must not be empty", field))
			continue
		}
		if j, dup := seen[t.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q is also tiers[%d]'s name", field, t.Name, j))
		}
		seen[t.Name] = i
		for _, msg := range validation.IsDNS1123Label(prefix + t.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q does not make a namespace name with prefix %q: %s", field, t.Name, prefix, msg))
		}
		for k, g := range t.Groups {
			if strings.TrimSpace(g) == "" {
				errs = append(errs, fmt.Errorf("%s.groups[%d]: must not be empty", field, k))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return tiers, nil
}

// tierSource keeps the tier ConfigMap parsed, from an informer that
// watches that one ConfigMap.
type tierSource struct {
	prefix   string
	what     string
	key      string
	informer cache.SharedIndexInformer
	current  atomic.Pointer[tierConfig]
}

func newTierSource(kube kubernetes.Interface, o *Options) *tierSource {
	ns, name := o.TierConfigNamespace, o.TierConfigName
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return kube.CoreV1().ConfigMaps(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return kube.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
		},
	}
	s := &tierSource{
		prefix:   o.TierNamespacePrefix,
		what:     fmt.Sprintf("ConfigMap %s/%s", ns, name),
		key:      ns + "/" + name,
		informer: cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}),
	}
	s.current.Store(&tierConfig{err: fmt.Errorf("%s is not read yet", s.what)})
	reload := func(any) { s.reload() }
	_, _ = s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    reload,
		UpdateFunc: func(_, _ any) { s.reload() },
		DeleteFunc: reload,
	})
	return s
}

func (s *tierSource) run(ctx context.Context) {
	s.informer.RunWithContext(ctx)
}

// reload parses the ConfigMap in the informer's store. A bad one is kept
// as an error that every request needing a tier returns: the server
// fails closed rather than serving an older configuration.
func (s *tierSource) reload() {
	s.current.Store(s.load())
}

func (s *tierSource) load() *tierConfig {
	obj, exists, err := s.informer.GetStore().GetByKey(s.key)
	if err != nil {
		return &tierConfig{err: fmt.Errorf("%s: %w", s.what, err)}
	}
	if !exists {
		return &tierConfig{err: fmt.Errorf("%s does not exist", s.what)}
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return &tierConfig{err: fmt.Errorf("%s: unexpected %T in the cache", s.what, obj)}
	}
	data, ok := cm.Data[TierConfigKey]
	if !ok {
		return &tierConfig{err: fmt.Errorf("%s has no key %s", s.what, TierConfigKey)}
	}
	tiers, err := parseTiers(s.what, data, s.prefix)
	if err != nil {
		return &tierConfig{err: err}
	}
	known := make(map[string]bool, len(tiers))
	for _, t := range tiers {
		known[t.Name] = true
	}
	return &tierConfig{tiers: tiers, known: known}
}

func (s *tierSource) config() *tierConfig { return s.current.Load() }

// namespace is the namespace of tier.
func (s *tierSource) namespace(tier string) string { return s.prefix + tier }

// userTier resolves the tier of the caller u, as an API error: 503 while
// the tier configuration is unusable, 403 when no tier lists the caller.
func (s *tierSource) userTier(u user.Info, resource string) (Tier, error) {
	t, err := s.config().resolve(s.prefix, u.GetGroups())
	switch {
	case errors.Is(err, errNoTier):
		return Tier{}, apierrors.NewForbidden(groupResource(resource), "",
			fmt.Errorf("user %q is in no MaaS tier: none of its groups %v is listed in %s", u.GetName(), u.GetGroups(), s.what))
	case err != nil:
		return Tier{}, apierrors.NewServiceUnavailable("the MaaS tier configuration is unusable: " + err.Error())
	}
	return t, nil
}

// isMinted says whether u is a ServiceAccount in a tier namespace: a
// token minted by tokenrequests. Such a caller must not mint or revoke.
func (s *tierSource) isMinted(u user.Info) bool {
	ns, _, err := serviceaccount.SplitUsername(u.GetName())
	if err != nil {
		return false
	}
	if s.prefix != "" && strings.HasPrefix(ns, s.prefix) {
		return true
	}
	for _, t := range s.config().tiers {
		if ns == s.namespace(t.Name) {
			return true
		}
	}
	return false
}

func (s *tierSource) syncedCheck() healthz.HealthChecker {
	return healthz.NamedCheck("tier-config-informer-synced", func(*http.Request) error {
		if !s.informer.HasSynced() {
			return fmt.Errorf("the informer of %s has not synced", s.what)
		}
		return nil
	})
}

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// tierConfig is the parsed tier ConfigMap, or why it cannot be used.
type tierConfig struct {
	cfg *tier.Config
	err error
}

// errNoTier is resolve's answer for groups that no tier lists.
var errNoTier = errors.New("no tier lists any of the groups")

// resolve returns the tier of a caller in groups (tier.Config.Resolve:
// the highest level, the first listed on a tie, a tier namespace's
// ServiceAccount group counting), errNoTier, or why the configuration
// cannot be used.
func (c *tierConfig) resolve(groups []string) (tier.Tier, error) {
	if c.err != nil {
		return tier.Tier{}, c.err
	}
	t, ok := c.cfg.Resolve(groups)
	if !ok {
		return tier.Tier{}, errNoTier
	}
	return t, nil
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
	ns, name := o.Tiers.ConfigMapNamespace, o.Tiers.ConfigMapName
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
		prefix:   o.Tiers.NamespacePrefix,
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
	data, ok := cm.Data[tier.ConfigMapKey]
	if !ok {
		return &tierConfig{err: fmt.Errorf("%s has no key %s", s.what, tier.ConfigMapKey)}
	}
	cfg, err := tier.Parse(data, s.prefix)
	if err != nil {
		// tier's errors start with the key: "ConfigMap ns/name key tiers: ...".
		return &tierConfig{err: fmt.Errorf("%s %w", s.what, err)}
	}
	return &tierConfig{cfg: cfg}
}

func (s *tierSource) config() *tierConfig { return s.current.Load() }

// namespace is the namespace of the tier named name.
func (s *tierSource) namespace(name string) string { return s.prefix + name }

// userTier resolves the tier of the caller u, as an API error: 503 while
// the tier configuration is unusable, 403 when no tier lists the caller.
func (s *tierSource) userTier(u user.Info, resource string) (tier.Tier, error) {
	return s.tierIn(s.config(), u, resource)
}

// tierIn is userTier under the tier configuration c.
func (s *tierSource) tierIn(c *tierConfig, u user.Info, resource string) (tier.Tier, error) {
	t, err := c.resolve(u.GetGroups())
	switch {
	case errors.Is(err, errNoTier):
		return tier.Tier{}, apierrors.NewForbidden(groupResource(resource), "",
			fmt.Errorf("user %q is in no MaaS tier: none of its groups %v is listed in %s", u.GetName(), u.GetGroups(), s.what))
	case err != nil:
		return tier.Tier{}, apierrors.NewServiceUnavailable("the MaaS tier configuration is unusable: " + err.Error())
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
	// Every tier namespace, of this configuration or an earlier one.
	return strings.HasPrefix(ns, s.prefix)
}

func (s *tierSource) syncedCheck() healthz.HealthChecker {
	return healthz.NamedCheck("tier-config-informer-synced", func(*http.Request) error {
		if !s.informer.HasSynced() {
			return fmt.Errorf("the informer of %s has not synced", s.what)
		}
		return nil
	})
}

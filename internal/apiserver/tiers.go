package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
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
// watches that one ConfigMap: a shared informer factory limited to its
// namespace, listing by name (a field selector).
type tierSource struct {
	prefix string
	what   string
	// key is the ConfigMap's namespace and name.
	key      types.NamespacedName
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   corev1listers.ConfigMapNamespaceLister
	// handler is reload's registration: it has synced when reload has
	// seen the informer's first list, not only the store.
	handler cache.ResourceEventHandlerRegistration
	// reloading serializes reload, so that the last stored is of the
	// newest store.
	reloading sync.Mutex
	current   atomic.Pointer[tierConfig]
	// loaded is set once current is of the informer's first list, the
	// ConfigMap or its absence.
	loaded atomic.Bool
}

func newTierSource(kube kubernetes.Interface, o *Options) (*tierSource, error) {
	ns, name := o.Tiers.ConfigMapNamespace, o.Tiers.ConfigMapName
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) {
			opts.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()
		}))
	configMaps := factory.Core().V1().ConfigMaps()
	s := &tierSource{
		prefix:   o.Tiers.NamespacePrefix,
		what:     fmt.Sprintf("ConfigMap %s/%s", ns, name),
		key:      types.NamespacedName{Namespace: ns, Name: name},
		factory:  factory,
		informer: configMaps.Informer(),
		lister:   configMaps.Lister().ConfigMaps(ns),
	}
	s.current.Store(&tierConfig{err: fmt.Errorf("%s is not read yet", s.what)})
	reload := func(any) { s.reload() }
	handler, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    reload,
		UpdateFunc: func(_, _ any) { s.reload() },
		DeleteFunc: reload,
	})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.what, err)
	}
	s.handler = handler
	return s, nil
}

// run runs the informer until ctx is done. Once it has listed, the
// ConfigMap is read even if no event came: a ConfigMap missing from the
// start is reported as missing, not as not read yet.
func (s *tierSource) run(ctx context.Context) {
	defer s.factory.Shutdown()
	s.factory.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), s.handler.HasSynced) {
		s.reload()
		s.loaded.Store(true)
	}
	<-ctx.Done()
}

// reload parses the ConfigMap in the informer's store. A bad one is kept
// as an error that every request needing a tier returns: the server
// fails closed rather than serving an older configuration.
func (s *tierSource) reload() {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.current.Store(s.load())
}

func (s *tierSource) load() *tierConfig {
	cm, err := s.lister.Get(s.key.Name)
	switch {
	case apierrors.IsNotFound(err):
		return &tierConfig{err: tier.NotFound(s.key.Namespace, s.key.Name)}
	case err != nil:
		return &tierConfig{err: fmt.Errorf("%s: %w", s.what, err)}
	}
	cfg, err := tier.FromConfigMap(cm, s.prefix)
	if err != nil {
		return &tierConfig{err: err}
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
		if !s.loaded.Load() {
			return fmt.Errorf("the informer of %s has not synced", s.what)
		}
		return nil
	})
}

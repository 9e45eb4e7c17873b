package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/warning"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// Index keys of the model cache's tier index besides tier names.
const (
	tierIndex        = "tier"
	indexAllTiers    = "\x00all"
	indexBadTierList = "\x00invalid"
)

// entry is what the model cache keeps of one LLMInferenceService: the Model
// it publishes, ready to serve, and its tiers annotation, read once. What
// the annotation grants depends on the tier list of the moment, so it is
// decided per request, by tier.Config.Grant as for the controller's
// RoleBindings.
type entry struct {
	*modelv1alpha1.Model
	tiers tier.Annotation
}

// newEntry makes the cache entry of a service.
func newEntry(svc *v1alpha2.LLMInferenceService) *entry {
	m := &modelv1alpha1.Model{
		TypeMeta: metav1.TypeMeta{APIVersion: modelv1alpha1.GroupVersion.String(), Kind: "Model"},
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name, Namespace: svc.Namespace, UID: svc.UID, Labels: svc.Labels,
			ResourceVersion: svc.ResourceVersion, CreationTimestamp: svc.CreationTimestamp,
		},
		Spec: modelv1alpha1.ModelSpec{ModelName: svc.Name},
		Status: modelv1alpha1.ModelStatus{
			URL: svc.Status.URL,
			Ready: slices.ContainsFunc(svc.Status.Conditions, func(c metav1.Condition) bool {
				return c.Type == v1alpha2.ConditionReady && c.Status == metav1.ConditionTrue
			}),
		},
	}
	if n := svc.Spec.Model.Name; n != nil && *n != "" {
		m.Spec.ModelName = *n
	}
	for _, a := range svc.Status.Addresses {
		m.Status.Addresses = append(m.Status.Addresses, modelv1alpha1.ModelAddress{Name: a.Name, URL: a.URL})
	}
	e := &entry{Model: m, tiers: tier.ReadAnnotation(svc.Annotations)}
	m.Spec.Tiers = e.tiers.Names
	return e
}

// model is the Model as a caller sees it under grant: its spec.tiers are
// the tiers granted, without the names the tier list lacks.
func (e *entry) model(grant tier.Grant) *modelv1alpha1.Model {
	if len(grant.Unknown) == 0 {
		return e.Model
	}
	m := *e.Model // shallow: only spec.tiers changes
	m.Spec.Tiers = grant.Names()
	return &m
}

// tierIndexFunc indexes published services by the tier names their
// annotation lists: the candidates of a tier, which Grant then decides on.
func tierIndexFunc(obj any) ([]string, error) {
	e, ok := obj.(*entry)
	switch {
	case !ok || !e.tiers.Published:
		return nil, nil
	case e.tiers.Err != nil:
		return []string{indexBadTierList}, nil
	case len(e.tiers.Names) == 0:
		return []string{indexAllTiers}, nil
	}
	return e.tiers.Names, nil
}

// transform turns the informer's services into cache entries before they
// are stored, so a list builds no objects.
func transform(obj any) (any, error) {
	if svc, ok := obj.(*v1alpha2.LLMInferenceService); ok {
		return newEntry(svc), nil
	}
	return obj, nil
}

// modelCache is an informer over every LLMInferenceService, indexed by tier.
type modelCache struct {
	informer cache.SharedIndexInformer
}

func newModelCache(cfg *restclient.Config, _ *tierSource) (*modelCache, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := restclient.CopyConfig(cfg)
	c.APIPath = "/apis"
	c.GroupVersion = &v1alpha2.GroupVersion
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := restclient.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", v1alpha2.GroupVersion, err)
	}
	lw := cache.NewListWatchFromClient(client, "llminferenceservices", metav1.NamespaceAll, fields.Everything())
	informer := cache.NewSharedIndexInformer(lw, &v1alpha2.LLMInferenceService{}, 0, cache.Indexers{tierIndex: tierIndexFunc})
	if err := informer.SetTransform(transform); err != nil {
		return nil, fmt.Errorf("model cache: %w", err)
	}
	return &modelCache{informer: informer}, nil
}

func (m *modelCache) run(ctx context.Context) { m.informer.RunWithContext(ctx) }

func (m *modelCache) syncedCheck() healthz.HealthChecker {
	return healthz.NamedCheck("llminferenceservice-informer-synced", func(*http.Request) error {
		if !m.informer.HasSynced() {
			return fmt.Errorf("the informer of %s llminferenceservices has not synced", v1alpha2.GroupVersion)
		}
		return nil
	})
}

// visible returns the entries of namespace ns (every namespace when empty)
// whose annotation grants the tier named tierName under cfg, each with its
// grant, sorted by namespace and name.
func (m *modelCache) visible(ns, tierName string, cfg *tier.Config) ([]granted, error) {
	var out []granted
	for _, key := range []string{tierName, indexAllTiers} {
		objs, err := m.informer.GetIndexer().ByIndex(tierIndex, key)
		if err != nil {
			return nil, fmt.Errorf("model cache: %w", err)
		}
		for _, o := range objs {
			e := o.(*entry)
			if ns != "" && e.Namespace != ns {
				continue
			}
			if g := cfg.Grant(e.tiers); g.Allows(tierName) {
				out = append(out, granted{entry: e, grant: g})
			}
		}
	}
	slices.SortFunc(out, func(a, b granted) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// granted is an entry with what its annotation grants.
type granted struct {
	*entry
	grant tier.Grant
}

// unreadable returns the published entries of ns (every namespace when
// empty) whose tier annotation cannot be read.
func (m *modelCache) unreadable(ns string) []*entry {
	objs, _ := m.informer.GetIndexer().ByIndex(tierIndex, indexBadTierList)
	var out []*entry
	for _, o := range objs {
		if e := o.(*entry); ns == "" || e.Namespace == ns {
			out = append(out, e)
		}
	}
	return out
}

func (m *modelCache) get(ns, name string) (*entry, bool) {
	obj, exists, err := m.informer.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil || !exists {
		return nil, false
	}
	e, ok := obj.(*entry)
	return e, ok
}

// modelStorage serves models: list and get, from the cache, filtered by
// the caller's tier.
type modelStorage struct {
	cache *modelCache
	tiers *tierSource
}

var (
	_ rest.Storage              = &modelStorage{}
	_ rest.Scoper               = &modelStorage{}
	_ rest.Getter               = &modelStorage{}
	_ rest.Lister               = &modelStorage{}
	_ rest.SingularNameProvider = &modelStorage{}
)

func (*modelStorage) New() runtime.Object     { return &modelv1alpha1.Model{} }
func (*modelStorage) NewList() runtime.Object { return &modelv1alpha1.ModelList{} }
func (*modelStorage) Destroy()                {}
func (*modelStorage) NamespaceScoped() bool   { return true }
func (*modelStorage) GetSingularName() string { return "model" }

// caller is the tier of the request's user, with the tier list it comes
// from, once the cache has synced.
func (s *modelStorage) caller(ctx context.Context) (tier.Tier, *tier.Config, error) {
	if !s.cache.informer.HasSynced() {
		return tier.Tier{}, nil, apierrors.NewServiceUnavailable("the cache of llminferenceservices has not synced yet")
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return tier.Tier{}, nil, apierrors.NewUnauthorized("no user in the request")
	}
	cfg := s.tiers.config()
	t, err := s.tiers.tierIn(cfg, u, "models")
	return t, cfg.cfg, err
}

// Get returns one model the caller's tier may use; any other name is
// NotFound, so that the caller learns nothing of services it may not use.
// A service whose annotation is malformed is NotFound for every tier.
func (s *modelStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	t, cfg, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ns := genericapirequest.NamespaceValue(ctx)
	e, ok := s.cache.get(ns, name)
	if !ok || !e.tiers.Published {
		return nil, apierrors.NewNotFound(groupResource("models"), name)
	}
	g := cfg.Grant(e.tiers)
	if !g.Allows(t.Name) {
		if e.tiers.Err != nil {
			warnNotPublished(ctx, e)
		}
		return nil, apierrors.NewNotFound(groupResource("models"), name)
	}
	warnUnknownTiers(ctx, e, g)
	return e.model(g).DeepCopy(), nil
}

// List returns the models the caller's tier may use. Services whose tier
// annotation names unknown tiers or cannot be read come with warnings.
func (s *modelStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	t, cfg, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ns := genericapirequest.NamespaceValue(ctx)
	entries, err := s.cache.visible(ns, t.Name, cfg)
	if err != nil {
		return nil, err
	}
	label, field := labels.Everything(), fields.Everything()
	if opts != nil && opts.LabelSelector != nil {
		label = opts.LabelSelector
	}
	if opts != nil && opts.FieldSelector != nil {
		field = opts.FieldSelector
	}
	list := &modelv1alpha1.ModelList{Items: make([]modelv1alpha1.Model, 0, len(entries))}
	for _, e := range entries {
		if !label.Matches(labels.Set(e.Labels)) || !field.Matches(fields.Set{"metadata.name": e.Name, "metadata.namespace": e.Namespace}) {
			continue
		}
		warnUnknownTiers(ctx, e.entry, e.grant)
		// A shallow copy: nothing downstream writes to the items.
		list.Items = append(list.Items, *e.model(e.grant))
	}
	for _, e := range s.cache.unreadable(ns) {
		warnNotPublished(ctx, e)
	}
	return list, nil
}

// warnNotPublished warns of a service whose annotation is malformed: no
// tier sees it.
func warnNotPublished(ctx context.Context, e *entry) {
	warning.AddWarning(ctx, "", fmt.Sprintf("LLMInferenceService %s/%s is not published: %v", e.Namespace, e.Name, e.tiers.Err))
}

// warnUnknownTiers warns of the names of a service's annotation that the
// tier list lacks: they grant nothing.
func warnUnknownTiers(ctx context.Context, e *entry, g tier.Grant) {
	if len(g.Unknown) > 0 {
		warning.AddWarning(ctx, "", fmt.Sprintf("LLMInferenceService %s/%s: %v; only %v see it", e.Namespace, e.Name, g.Err, g.Names()))
	}
}

var modelColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "The LLMInferenceService's name."},
	{Name: "Model", Type: "string", Description: "The model name clients send in requests."},
	{Name: "Ready", Type: "boolean", Description: "Whether the service is Ready."},
	{Name: "URL", Type: "string", Description: "The service's first external URL."},
	{Name: "Tiers", Type: "string", Description: "The tiers the service is published to; <all> for every tier."},
}

// ConvertToTable makes `kubectl get models` print NAME, MODEL, READY, URL
// and TIERS.
func (*modelStorage) ConvertToTable(_ context.Context, obj, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: modelColumns}
	var items []modelv1alpha1.Model
	switch o := obj.(type) {
	case *modelv1alpha1.Model:
		items = []modelv1alpha1.Model{*o}
	case *modelv1alpha1.ModelList:
		items = o.Items
		table.ListMeta = o.ListMeta
	default:
		return nil, fmt.Errorf("models: cannot make a table of %T", obj)
	}
	table.Rows = make([]metav1.TableRow, len(items))
	for i := range items {
		m := &items[i]
		tiers := "<all>"
		if len(m.Spec.Tiers) > 0 {
			tiers = strings.Join(m.Spec.Tiers, ",")
		}
		table.Rows[i] = metav1.TableRow{
			Cells:  []any{m.Name, m.Spec.ModelName, m.Status.Ready, m.Status.URL, tiers},
			Object: runtime.RawExtension{Object: m},
		}
	}
	return table, nil
}

func groupResource(resource string) schema.GroupResource {
	return schema.GroupResource{Group: modelv1alpha1.GroupName, Resource: resource}
}

func groupKind(kind string) schema.GroupKind {
	return schema.GroupKind{Group: modelv1alpha1.GroupName, Kind: kind}
}

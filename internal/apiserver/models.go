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
	"k8s.io/apimachinery/pkg/util/validation/field"
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
// it publishes, ready to serve, and the parsed tier annotation.
type entry struct {
	*modelv1alpha1.Model
	published bool
	allTiers  bool
	// annotation is the tier annotation's value, and annotationErr why
	// it could not be read.
	annotation    string
	annotationErr error
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
	e := &entry{Model: m}
	value, ok := svc.Annotations[tier.AnnotationTiers]
	if !ok {
		return e
	}
	e.published, e.annotation = true, value
	tiers, err := tier.ParseAnnotation(value)
	if err != nil {
		e.annotationErr = err
		return e
	}
	m.Spec.Tiers = tiers
	e.allTiers = len(tiers) == 0
	return e
}

// annotationError is the API error of a service whose tier annotation
// cannot be read.
func (e *entry) annotationError() error {
	return apierrors.NewInvalid(groupKind("Model"), e.Namespace+"/"+e.Name, field.ErrorList{
		field.Invalid(field.NewPath("metadata", "annotations").Key(tier.AnnotationTiers), e.annotation, e.annotationErr.Error()),
	})
}

// unknownTiers lists the tiers of the annotation that the configuration
// does not know.
func (e *entry) unknownTiers(c *tierConfig) []string {
	if c.err != nil {
		return nil
	}
	var unknown []string
	for _, t := range e.Spec.Tiers {
		if _, ok := c.cfg.Lookup(t); !ok {
			unknown = append(unknown, t)
		}
	}
	return unknown
}

// tierIndexFunc indexes published services by the tiers that may use them.
func tierIndexFunc(obj any) ([]string, error) {
	e, ok := obj.(*entry)
	switch {
	case !ok || !e.published:
		return nil, nil
	case e.annotationErr != nil:
		return []string{indexBadTierList}, nil
	case e.allTiers:
		return []string{indexAllTiers}, nil
	}
	return e.Spec.Tiers, nil
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
// that the tier named tierName may use, sorted by namespace and name.
func (m *modelCache) visible(ns, tierName string) ([]*entry, error) {
	var out []*entry
	for _, key := range []string{tierName, indexAllTiers} {
		objs, err := m.informer.GetIndexer().ByIndex(tierIndex, key)
		if err != nil {
			return nil, fmt.Errorf("model cache: %w", err)
		}
		for _, o := range objs {
			if e := o.(*entry); ns == "" || e.Namespace == ns {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b *entry) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
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

// caller is the tier of the request's user, with the configuration it
// comes from, once the cache has synced.
func (s *modelStorage) caller(ctx context.Context) (tier.Tier, *tierConfig, error) {
	if !s.cache.informer.HasSynced() {
		return tier.Tier{}, nil, apierrors.NewServiceUnavailable("the cache of llminferenceservices has not synced yet")
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return tier.Tier{}, nil, apierrors.NewUnauthorized("no user in the request")
	}
	cfg := s.tiers.config()
	t, err := s.tiers.userTier(u, "models")
	return t, cfg, err
}

// Get returns one model the caller's tier may use; any other name is
// NotFound, so that the caller learns nothing of services it may not use.
func (s *modelStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	t, cfg, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ns := genericapirequest.NamespaceValue(ctx)
	notFound := apierrors.NewNotFound(groupResource("models"), name)
	e, ok := s.cache.get(ns, name)
	switch {
	case !ok || !e.published:
		return nil, notFound
	case e.annotationErr != nil:
		return nil, e.annotationError()
	case !e.allTiers && !slices.Contains(e.Spec.Tiers, t.Name):
		return nil, notFound
	}
	warnUnknownTiers(ctx, e, cfg)
	return e.DeepCopy(), nil
}

// List returns the models the caller's tier may use. Services whose tier
// annotation names unknown tiers or cannot be read come with warnings.
func (s *modelStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	t, cfg, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	ns := genericapirequest.NamespaceValue(ctx)
	entries, err := s.cache.visible(ns, t.Name)
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
		warnUnknownTiers(ctx, e, cfg)
		// A shallow copy: nothing downstream writes to the items.
		list.Items = append(list.Items, *e.Model)
	}
	for _, e := range s.cache.unreadable(ns) {
		warning.AddWarning(ctx, "", fmt.Sprintf("LLMInferenceService %s/%s is not published: %v", e.Namespace, e.Name, e.annotationErr))
	}
	return list, nil
}

func warnUnknownTiers(ctx context.Context, e *entry, cfg *tierConfig) {
	if unknown := e.unknownTiers(cfg); len(unknown) > 0 {
		warning.AddWarning(ctx, "", fmt.Sprintf("LLMInferenceService %s/%s: annotation %s names tiers that %s does not define: %s",
			e.Namespace, e.Name, tier.AnnotationTiers, "the tier configuration", strings.Join(unknown, ", ")))
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

package simdataplane

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// Defaults of Options.
const (
	DefaultV1PoolDelay    = 5 * time.Second
	DefaultGatewayAddress = "192.0.2.10"
	DefaultControllerName = "odh-serving.opendatahub.io/simulated-gateway"
	// FieldManager owns every status the simulator writes.
	FieldManager = "odh-serving-simulated-dataplane"
)

// DefaultWorkloadSelector selects the LeaderWorkerSets of
// LLMInferenceServices.
var DefaultWorkloadSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "llminferenceservice"})

// Options tune the simulation. The zero value means every default.
type Options struct {
	// V1PoolDelay is how long after first seeing a v1 InferencePool the
	// simulated gateway accepts it (v1alpha2 pools are accepted at once).
	// Zero means DefaultV1PoolDelay; use a tiny value for "at once".
	V1PoolDelay time.Duration
	// GatewayAddress is written on every Programmed Gateway: an IP address
	// or a host name.
	GatewayAddress string
	// WorkloadSelector picks the LeaderWorkerSets reported Available;
	// others are left alone.
	WorkloadSelector labels.Selector
	// ControllerName is the gateway controller named in route and pool
	// parent statuses; statuses of other controllers are kept.
	ControllerName string
	// Log receives one line per status change; nil discards them.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.V1PoolDelay == 0 {
		o.V1PoolDelay = DefaultV1PoolDelay
	}
	if o.GatewayAddress == "" {
		o.GatewayAddress = DefaultGatewayAddress
	}
	if o.WorkloadSelector == nil {
		o.WorkloadSelector = DefaultWorkloadSelector
	}
	if o.ControllerName == "" {
		o.ControllerName = DefaultControllerName
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// DataPlane is the simulation, ready to Start.
type DataPlane struct {
	mgr  manager.Manager
	opts Options

	logMu sync.Mutex
	// firstSeen records when the simulator first saw each v1 pool; its
	// acceptance waits V1PoolDelay from then.
	firstSeen sync.Map
	// served says which optional kinds the cluster serves.
	served map[schema.GroupKind]bool
}

// Kinds the simulator works on; the Gateway API is
// required, the others are skipped when their CRD is missing.
var (
	gkLWS         = schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"}
	gkPoolV1      = schema.GroupKind{Group: gieapiv1.GroupVersion.Group, Kind: "InferencePool"}
	gkPoolAlpha2  = schema.GroupKind{Group: gieapixv1alpha2.GroupVersion.Group, Kind: "InferencePool"}
	gkGateway     = schema.GroupKind{Group: gatewayv1.GroupName, Kind: "Gateway"}
	gkGatewayCls  = schema.GroupKind{Group: gatewayv1.GroupName, Kind: "GatewayClass"}
	gkHTTPRoute   = schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}
	optionalKinds = []schema.GroupKind{gkLWS, gkPoolV1, gkPoolAlpha2}
	requiredKinds = []schema.GroupKind{gkGateway, gkGatewayCls, gkHTTPRoute}
)

// NewScheme returns the kinds the simulator reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, gieapiv1.Install, gieapixv1alpha2.Install, gatewayv1.Install, lwsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("simulated data plane: build scheme: %w", err)
		}
	}
	return s, nil
}

// New checks which kinds the cluster serves and sets up one controller per
// simulated kind.
func New(cfg *rest.Config, opts Options) (*DataPlane, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Tests start several simulations in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("simulated data plane: create manager: %w", err)
	}
	d := &DataPlane{mgr: mgr, opts: opts.withDefaults(), served: map[schema.GroupKind]bool{}}
	mapper := mgr.GetRESTMapper()
	for _, gk := range requiredKinds {
		if _, err := mapper.RESTMapping(gk); err != nil {
			return nil, fmt.Errorf("simulated data plane: the cluster does not serve %s (install the Gateway API CRDs first): %w", gk, err)
		}
	}
	for _, gk := range optionalKinds {
		_, err := mapper.RESTMapping(gk)
		switch {
		case err == nil:
			d.served[gk] = true
		case meta.IsNoMatchError(err):
			d.logf("%s is not served; not simulating it", gk)
		default:
			return nil, fmt.Errorf("simulated data plane: look up %s: %w", gk, err)
		}
	}
	if err := d.setup(); err != nil {
		return nil, err
	}
	return d, nil
}

// Start runs the simulation until ctx is done.
func (d *DataPlane) Start(ctx context.Context) error {
	d.logf("started: LeaderWorkerSets %q become Available, gateways Programmed at %s, v1 InferencePools accepted %s after they appear",
		d.opts.WorkloadSelector, d.opts.GatewayAddress, d.opts.V1PoolDelay)
	if err := d.mgr.Start(ctx); err != nil {
		return fmt.Errorf("simulated data plane: %w", err)
	}
	return nil
}

// Run is New followed by Start.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	d, err := New(cfg, opts)
	if err != nil {
		return err
	}
	return d.Start(ctx)
}

func (d *DataPlane) setup() error {
	steps := []func() error{d.setupGatewayClasses, d.setupGateways, d.setupRoutes}
	if d.served[gkLWS] {
		steps = append(steps, d.setupLWS)
	}
	if d.served[gkPoolV1] {
		steps = append(steps, d.setupPoolsV1)
	}
	if d.served[gkPoolAlpha2] {
		steps = append(steps, d.setupPoolsAlpha2)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("simulated data plane: %w", err)
		}
	}
	return nil
}

func (d *DataPlane) logf(format string, args ...any) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	fmt.Fprintf(d.opts.Log, "[simulated data plane] "+format+"\n", args...)
}

func (d *DataPlane) client() client.Client { return d.mgr.GetClient() }

// writeStatus sets *status, a part of obj's status, to next and writes obj's
// status as FieldManager; what says what the write does, for its error. When
// *status holds next already it writes nothing: like the controllers it
// plays, the simulator makes no write in steady state. wrote says whether
// there was a change to log.
func writeStatus[S any](ctx context.Context, d *DataPlane, obj client.Object, status *S, next S, what string) (wrote bool, err error) {
	if equality.Semantic.DeepEqual(*status, next) {
		return false, nil
	}
	*status = next
	if err := d.client().Status().Update(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return true, nil
}

// selected says whether a workload is one the simulator reports on.
func (d *DataPlane) selected(obj client.Object) bool {
	return d.opts.WorkloadSelector.Matches(labels.Set(obj.GetLabels()))
}

// serviceExists says whether a Service exists (from the cache).
func (d *DataPlane) serviceExists(ctx context.Context, namespace, name string) (bool, error) {
	return d.exists(ctx, &corev1.Service{}, namespace, name)
}

func (d *DataPlane) exists(ctx context.Context, obj client.Object, namespace, name string) (bool, error) {
	err := d.client().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
	if err == nil {
		return true, nil
	}
	if client.IgnoreNotFound(err) == nil {
		return false, nil
	}
	return false, err
}

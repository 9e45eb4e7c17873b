package simdataplane

import (
	"context"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// FieldManager owns every status the simulator writes.
const FieldManager = "odh-serving-simulated-dataplane"

// DefaultWorkloadSelector selects the LeaderWorkerSets of
// LLMInferenceServices.
var DefaultWorkloadSelector = labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "llminferenceservice"})

// Options tune the simulation. The zero value means every default.
type Options struct {
	// WorkloadSelector picks the LeaderWorkerSets reported Available;
	// others are left alone.
	WorkloadSelector labels.Selector
	// Log receives one line per status change; nil discards them.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.WorkloadSelector == nil {
		o.WorkloadSelector = DefaultWorkloadSelector
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
}

// NewScheme returns the kinds the simulator reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, lwsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("simulated data plane: build scheme: %w", err)
		}
	}
	return s, nil
}

// New sets up the LeaderWorkerSet controller; the cluster must serve
// LeaderWorkerSets.
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
	d := &DataPlane{mgr: mgr, opts: opts.withDefaults()}
	gk := schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk); err != nil {
		return nil, fmt.Errorf("simulated data plane: the cluster does not serve %s (install the LWS CRDs first): %w", gk, err)
	}
	if err := d.setupLWS(); err != nil {
		return nil, fmt.Errorf("simulated data plane: %w", err)
	}
	return d, nil
}

// Start runs the simulation until ctx is done.
func (d *DataPlane) Start(ctx context.Context) error {
	d.logf("started: LeaderWorkerSets %q become Available", d.opts.WorkloadSelector)
	if err := d.mgr.Start(ctx); err != nil {
		return fmt.Errorf("simulated data plane: %w", err)
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

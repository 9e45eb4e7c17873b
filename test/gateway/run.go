package gateway

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Gateway is the whole test gateway on a cluster: the Router reading
// through the manager's cache, the Listeners serving every Gateway at a
// loopback address of its own, and the status it observes (NewStatus).
type Gateway struct {
	mgr       manager.Manager
	Router    *Router
	Listeners *Listeners
}

// NewScheme returns the kinds the test gateway reads and writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gieapiv1.Install, gieapixv1alpha2.Install, gatewayv1.Install} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("test gateway: build scheme: %w", err)
		}
	}
	return s, nil
}

// New sets up the test gateway for the cluster of cfg, handing out
// Gateway addresses from firstAddress (empty: DefaultFirstAddress). An
// AuthPolicies authorizer without a Reader or a reviewing client gets the
// gateway's cache and client.
func New(cfg *rest.Config, firstAddress string, opts Options) (*Gateway, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := manager.New(cfg, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return nil, fmt.Errorf("test gateway: create manager: %w", err)
	}
	if ap, ok := opts.Authorizer.(AuthPolicies); ok {
		// AuthPolicies read through the manager's cache (informers, so a
		// request costs no API server read) and review with its client.
		if ap.Reader == nil {
			ap.Reader = mgr.GetCache()
		}
		if ap.Reviewer.Client == nil {
			ap.Reviewer.Client = mgr.GetClient()
		}
		opts.Authorizer = ap
	}
	if rl, ok := opts.RateLimiter.(RateLimitPolicies); ok && rl.Reader == nil {
		// RateLimitPolicies read through the cache too.
		fresh := NewRateLimitPolicies(mgr.GetCache())
		fresh.Now = rl.Now
		opts.RateLimiter = fresh
	}
	g := &Gateway{mgr: mgr, Router: NewRouter(mgr.GetClient(), opts)}
	if g.Listeners, err = NewListeners(mgr, g.Router, firstAddress); err != nil {
		return nil, err
	}
	if err := NewStatus(mgr, g.Router); err != nil {
		return nil, err
	}
	return g, nil
}

// Start runs the test gateway until ctx ends, then stops serving.
func (g *Gateway) Start(ctx context.Context) error {
	defer g.Router.Close()
	if err := g.mgr.Start(ctx); err != nil {
		return fmt.Errorf("test gateway: %w", err)
	}
	return nil
}

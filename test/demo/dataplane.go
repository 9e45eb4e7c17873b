package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/test/endpointpicker"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/modelserver"
)

// dataPlane is the rest of the data plane, test tooling all: the test
// gateway (test/gateway), which serves every Gateway at a loopback address
// and writes the status it observes; the model-server simulator at every
// Running workload pod's IP (test/modelserver); GIE's endpoint picker as a
// process for every Running endpoint picker pod (test/endpointpicker's
// Runner), which the gateway asks over ext_proc.
type dataPlane struct {
	gateway *gateway.Gateway
	fleet   *modelserver.Fleet
	pickers *endpointpicker.Runner
	cs      kubernetes.Interface
}

// newDataPlane sets up the data plane for the cluster of cfg, running the
// endpoint picker binary epp with its files under dir.
func newDataPlane(cfg *rest.Config, epp, dir string, log io.Writer) (*dataPlane, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("data plane: %w", err)
	}
	pickers, err := endpointpicker.NewRunner(cfg, epp, dir, log)
	if err != nil {
		return nil, err
	}
	// The AuthPolicies in the cluster are enforced (none until step 10
	// makes one), read through the gateway's cache and reviewed with its
	// admin credentials, as Authorino's own.
	gw, err := gateway.New(cfg, "", gateway.Options{Log: log, EndpointPicker: pickers.EndpointPicker, Authorizer: gateway.AuthPolicies{}})
	if err != nil {
		return nil, err
	}
	fleet := modelserver.NewFleet(modelserver.ClientSecrets(cs), modelserver.Options{Log: log})
	return &dataPlane{gateway: gw, fleet: fleet, pickers: pickers, cs: cs}, nil
}

// Start runs every part until ctx ends or one fails.
func (d *dataPlane) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := []func(context.Context) error{
		d.gateway.Start, d.pickers.Run,
		func(ctx context.Context) error { return d.fleet.Run(ctx, d.cs) },
	}
	errs := make(chan error, len(parts))
	for _, start := range parts {
		go func() {
			err := start(ctx)
			cancel()
			errs <- err
		}()
	}
	var all []error
	for range parts {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// dataplane runs the data plane in the foreground until interrupted; a
// DEMO_KEEP=1 run leaves one running in the background.
func dataplane(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to serve (required)")
	epp := fs.String("epp", "", "GIE's endpoint picker binary (required)")
	dir := fs.String("dir", "", "folder of the endpoint pickers' logs, certificates and kubeconfigs (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || *epp == "" || *dir == "" {
		return fmt.Errorf("dataplane: --kubeconfig, --epp and --dir are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("dataplane: kubeconfig: %w", err)
	}
	crlog.SetLogger(zap.New(zap.WriteTo(out)))
	d, err := newDataPlane(cfg, *epp, *dir, out)
	if err != nil {
		return err
	}
	return d.Start(ctx)
}

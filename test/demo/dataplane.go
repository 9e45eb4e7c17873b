package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/simdataplane"
)

// dataPlane is the rest of the data plane, test tooling all: the test
// gateway (test/gateway), which serves every Gateway at a loopback address
// and writes the status it observes, and the simulated LeaderWorkerSet
// status (test/simdataplane).
type dataPlane struct {
	gateway *gateway.Gateway
	lws     *simdataplane.DataPlane
}

func newDataPlane(cfg *rest.Config, log io.Writer) (*dataPlane, error) {
	gw, err := gateway.New(cfg, "", gateway.Options{Log: log})
	if err != nil {
		return nil, err
	}
	lws, err := simdataplane.New(cfg, simdataplane.Options{Log: log})
	if err != nil {
		return nil, err
	}
	return &dataPlane{gateway: gw, lws: lws}, nil
}

// Start runs both until ctx ends or one fails.
func (d *dataPlane) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	for _, start := range []func(context.Context) error{d.gateway.Start, d.lws.Start} {
		go func() {
			err := start(ctx)
			cancel()
			errs <- err
		}()
	}
	return errors.Join(<-errs, <-errs)
}

// dataplane runs the data plane in the foreground until interrupted; a
// DEMO_KEEP=1 run leaves one running in the background.
func dataplane(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to serve (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return fmt.Errorf("dataplane: --kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("dataplane: kubeconfig: %w", err)
	}
	crlog.SetLogger(zap.New(zap.WriteTo(out)))
	d, err := newDataPlane(cfg, out)
	if err != nil {
		return err
	}
	return d.Start(ctx)
}

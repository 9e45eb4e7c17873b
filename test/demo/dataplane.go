package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"k8s.io/client-go/tools/clientcmd"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/opendatahub-io/odh-serving/test/simdataplane"
)

// dataplane runs the simulated data plane in the foreground until
// interrupted; a DEMO_KEEP=1 run leaves one running in the background.
func dataplane(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to simulate a data plane for (required)")
	delay := fs.Duration("v1-pool-delay", simdataplane.DefaultV1PoolDelay, "how long after a v1 InferencePool appears the simulated gateway accepts it")
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
	return simdataplane.Run(ctx, cfg, simdataplane.Options{V1PoolDelay: *delay, Log: out})
}

package controller

import (
	"context"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/internal/crdlifecycle"
	"github.com/opendatahub-io/odh-serving/internal/migration"
)

// crdApplier applies the embedded GIE CRDs once, when this replica becomes
// the leader (or at start, without leader election). A standby writes no
// CRD: it would race the leader, and has nothing to add.
type crdApplier struct {
	client client.Client
}

// Start applies the CRDs; an error stops the manager.
func (a crdApplier) Start(ctx context.Context) error { return applyCRDs(ctx, a.client) }

// NeedLeaderElection is true: only the leader writes the CRDs.
func (crdApplier) NeedLeaderElection() bool { return true }

// applyCRDs applies the embedded GIE CRDs (internal/crdlifecycle).
// The v1alpha2 InferencePool CRD is kept up to date while any service's
// migration is unfinished. A live CRD with a newer bundle version is left
// alone, and said so in the log.
func applyCRDs(ctx context.Context, c client.Client) error {
	list := &v1alpha2.LLMInferenceServiceList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("list LLMInferenceServices: %w", err)
	}
	alpha2 := false
	for i := range list.Items {
		phase := ""
		if ip := list.Items[i].Status.InferencePool; ip != nil {
			phase = ip.MigrationPhase
		}
		if migration.Unfinished(phase) {
			alpha2 = true
			break
		}
	}
	report, err := crdlifecycle.Apply(ctx, c, crdlifecycle.ApplyOptions{Alpha2: alpha2})
	for _, res := range report.Results {
		crdAppliesTotal.WithLabelValues(res.Name, strings.ToLower(string(res.Action))).Inc()
	}
	log := ctrl.LoggerFrom(ctx).WithName("crds")
	for _, res := range report.Skipped() {
		log.Info("left a CRD alone", "crd", res.Name, "reason", res.Reason, "ours", res.Ours, "live", res.Live)
	}
	if err != nil {
		crdAppliesTotal.WithLabelValues("", "error").Inc()
		return fmt.Errorf("apply the GIE CRDs: %w", err)
	}
	return nil
}

package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// writeStatus patches the status when it changed, and only then.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass) error {
	p.status.Conditions = p.conds.sorted()
	if p.settled {
		p.status.ObservedGeneration = p.svc.Generation
	}
	key := types.NamespacedName{Namespace: p.svc.Namespace, Name: p.svc.Name}.String()
	from := phaseNone
	if ip := p.svc.Status.InferencePool; ip != nil {
		from = ip.MigrationPhase
	}
	to := phaseNone
	if ip := p.status.InferencePool; ip != nil {
		to = ip.MigrationPhase
	}
	if !equality.Semantic.DeepEqual(p.svc.Status, p.status) {
		base := p.svc.DeepCopy()
		p.svc.Status = p.status
		if err := r.client.Status().Patch(ctx, p.svc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(convention.FieldManager)); err != nil {
			// Not recorded: the retry reads the same old phase and counts
			// the step then, once.
			return fmt.Errorf("patch status of LLMInferenceService %s: %w", key, err)
		}
		r.writes.wrote(p.svc)
	}
	// Only what the status now says counts, so a step is counted once
	// whatever fails or is retried.
	phases.record(key, from, to)
	return nil
}

// renderFailed records a spec that cannot be rendered: nothing is applied
// or deleted until it is fixed.
func (p *pass) renderFailed(err error) {
	p.conds.set(v1alpha2.ConditionPresetsCombined, "False", ReasonCombineBaseError, err.Error())
	p.conds.set(v1alpha2.ConditionReady, "False", ReasonCombineBaseError, err.Error())
	p.settled = true
}

// crdMissing records kinds the service needs whose CRDs are not served;
// nothing is applied until they are.
func (p *pass) crdMissing(missing []kind) {
	var workload, router []string
	for _, k := range missing {
		msg := fmt.Sprintf("the CustomResourceDefinition %s (%s) is not installed or not established; reconciling resumes when it is", k.crd, k.gvk.GroupVersion())
		if k.workload {
			workload = append(workload, msg)
		} else {
			router = append(router, msg)
		}
	}
	if len(workload) > 0 {
		p.conds.set(v1alpha2.ConditionWorkloadsReady, "False", ReasonCRDMissing, strings.Join(workload, "; "))
	}
	if len(router) > 0 {
		p.conds.set(v1alpha2.ConditionRouterReady, "False", ReasonCRDMissing, strings.Join(router, "; "))
	}
	p.conds.ready()
	p.settled = true
}

// crdsPresent drops a CRDMissing left by an earlier pass once every kind
// the service needs is served: if this pass fails before it observes the
// children, the status says why, not that a CRD is missing.
func (p *pass) crdsPresent() {
	for _, t := range []string{v1alpha2.ConditionWorkloadsReady, v1alpha2.ConditionRouterReady} {
		if c := p.conds.get(t); c != nil && c.Reason == ReasonCRDMissing {
			p.conds.remove(t)
		}
	}
}

// failed records an error writing or reading children.
func (p *pass) failed(workload bool, err error) {
	t := v1alpha2.ConditionRouterReady
	if workload {
		t = v1alpha2.ConditionWorkloadsReady
	}
	p.conds.set(t, "False", ReasonReconcileError, err.Error())
	p.conds.ready()
}

// appliedConfigs lists the presets merged into the spec, in merge order,
// as KServe's status.appliedConfigs does: the well-known ones (Preset),
// then the baseRefs (UserRef).
func appliedConfigs(layers []engine.Layer) []v1alpha2.AppliedConfigRef {
	var out []v1alpha2.AppliedConfigRef
	for _, l := range layers {
		source := "Preset"
		switch l.Why {
		case "service":
			continue
		case "baseRef":
			source = "UserRef"
		}
		out = append(out, v1alpha2.AppliedConfigRef{Name: l.Preset, Namespace: l.Namespace, Source: source})
	}
	return out
}

// dropKServeStatus clears the status fields KServe's controller writes and
// ours does not (a service moved from KServe with its objects carries
// them): they describe KServe's objects, not ours. The first status write
// removes them; the status stays the same from then on. (workloads and
// appliedConfigs are ours too: replaced when observed.)
func dropKServeStatus(s *v1alpha2.LLMInferenceServiceStatus) {
	s.Address, s.Router = nil, nil
	for i := range s.Addresses {
		s.Addresses[i].AddressExtensions = v1alpha2.AddressExtensions{}
	}
}

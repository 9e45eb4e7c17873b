package controller

import (
	"context"
	"errors"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// classify finds each child's kind and returns the CRDs that are missing
// for the kinds rendered.
func (r *Reconciler) classify(p *pass) []kind {
	var missing []kind
	p.kinds = make([]kind, len(p.children))
	for i, u := range p.children {
		k, ok := kindOf(u.GroupVersionKind())
		if !ok {
			// The engine renders nothing else; a new kind must be added to
			// childKinds before it can be applied and pruned.
			k = kind{gvk: u.GroupVersionKind(), crd: "unknown kind " + u.GroupVersionKind().String()}
		}
		p.kinds[i] = k
		if !r.kinds.has(k) && !slices.ContainsFunc(missing, func(m kind) bool { return m.crd == k.crd }) {
			missing = append(missing, k)
		}
	}
	return missing
}

// applyAll applies every child in order. It goes on after a failure so one
// bad child does not hold back the rest, and reports the failures.
//
// The children go in the engine's waves (engine.Child.Wave): the
// ServiceAccounts and Roles, then the bindings and Services, then the
// workloads, then the pools and the route. Within a wave they are applied
// concurrently; a new service's writes wait on the API server, not on
// each other.
func (r *Reconciler) applyAll(ctx context.Context, p *pass) error {
	errs := make([]error, len(p.children))
	responses := make([]*unstructured.Unstructured, len(p.children))
	for _, wave := range p.res.Waves() {
		var wg sync.WaitGroup
		for _, i := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, k := p.children[i], p.kinds[i]
				if errs[i] = claim(u, p.svc, k); errs[i] != nil {
					return
				}
				wrote, err := r.applyChild(ctx, p.svc, u, k)
				if errs[i] = err; err == nil && wrote {
					responses[i] = u
				}
			}()
		}
		wg.Wait()
	}
	workloadFailed := false
	for i, u := range responses {
		if u != nil {
			if p.applied == nil {
				p.applied = map[childID]*unstructured.Unstructured{}
			}
			p.applied[childID{gvk: p.kinds[i].gvk, name: u.GetName()}] = u
		}
		workloadFailed = workloadFailed || (errs[i] != nil && p.kinds[i].workload)
	}
	err := errors.Join(errs...)
	if err != nil {
		p.failed(workloadFailed, err)
	}
	return err
}

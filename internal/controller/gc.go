package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// childID names a child by kind and name.
type childID struct {
	gvk  schema.GroupVersionKind
	name string
}

// prune deletes the service's children that were not rendered this time:
// every object of a child kind that carries the service's labels
// (app.kubernetes.io/part-of=llminferenceservice,
// app.kubernetes.io/name=<service>) and that the service controls. An
// object with the same labels or name that the service does not control is
// never touched.
func (r *Reconciler) prune(ctx context.Context, p *pass) error {
	keep := make(map[childID]bool, len(p.children))
	for _, u := range p.children {
		keep[childID{gvk: u.GroupVersionKind(), name: u.GetName()}] = true
	}
	for _, k := range childKinds {
		if !r.kinds.has(k) || !r.holds(k) || (k.certManager && r.opts.CertMode != convention.CertManager) {
			continue
		}
		if err := r.pruneKind(ctx, p.svc, k, keep); err != nil {
			p.failed(k.workload, err)
			return err
		}
	}
	return nil
}

// dropRenamedClusterChildren deletes the service's cluster-scoped children
// under names this version does not give them (build.ClusterNames): the
// ClusterRoleBindings earlier versions named <namespace>-<name><suffix>,
// a name two services could share. A pass that renders prunes them with
// the rest, after the new ones are applied; a pass whose render fails
// applies and prunes nothing else, but drops these, so an upgrade removes
// an old binding even from a service whose spec this version refuses (one
// whose endpoint picker ran as a ServiceAccount its template named, which
// the binding made an auth delegator). Helm owns the children in static
// mode, and replaces them itself.
func (r *Reconciler) dropRenamedClusterChildren(ctx context.Context, svc *v1alpha2.LLMInferenceService) error {
	if r.opts.StaticMode {
		return nil
	}
	names, err := build.ClusterNames(svc.Namespace, svc.Name)
	if err != nil {
		return err
	}
	for _, k := range childKinds {
		if !k.clusterScoped || !r.kinds.has(k) {
			continue
		}
		keep := map[childID]bool{}
		for _, n := range names {
			keep[childID{gvk: k.gvk, name: n}] = true
		}
		if err := r.pruneKind(ctx, svc, k, keep); err != nil {
			return err
		}
	}
	return nil
}

// pruneKind deletes the service's children of one kind that are not in keep.
// While the kind's cache is behind, r.client lists the children from the
// API server: a child deleted since is not deleted again.
func (r *Reconciler) pruneKind(ctx context.Context, svc *v1alpha2.LLMInferenceService, k kind, keep map[childID]bool) error {
	return r.pruneFrom(ctx, r.client, true, svc, k, keep)
}

// pruneFrom is pruneKind reading the children from reader: the cache
// (indexed) while the service lives, the API server itself when it is being
// finalized (a child created just before may not be in the cache yet, and
// nothing would delete it after the finalizer is gone).
func (r *Reconciler) pruneFrom(ctx context.Context, reader client.Reader, indexed bool, svc *v1alpha2.LLMInferenceService, k kind, keep map[childID]bool) error {
	list := k.newList()
	opts := []client.ListOption{
		client.MatchingLabels{convention.LabelPartOf: convention.PartOf, convention.LabelName: svc.Name},
	}
	if indexed {
		opts = append(opts, client.MatchingFields{indexChildOf: svc.Name})
	}
	if !k.clusterScoped {
		opts = append(opts, client.InNamespace(svc.Namespace))
	}
	if err := reader.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("list %s children of %s/%s: %w", k.gvk.Kind, svc.Namespace, svc.Name, err)
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok || keep[childID{gvk: k.gvk, name: obj.GetName()}] || !controls(svc, obj, k) {
			return nil
		}
		return r.deleteChild(ctx, obj, k)
	})
}

// deleteChild deletes one child, only if it is still the object that was
// read (same UID), and lets the garbage collector take what it owns.
func (r *Reconciler) deleteChild(ctx context.Context, obj client.Object, k kind) error {
	uid := obj.GetUID()
	if u, ok := obj.(interface{ SetGroupVersionKind(schema.GroupVersionKind) }); ok {
		u.SetGroupVersionKind(k.gvk)
	}
	r.verified.forget(verifiedID{gvk: k.gvk, key: client.ObjectKeyFromObject(obj)})
	err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s/%s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

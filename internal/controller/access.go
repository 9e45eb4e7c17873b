package controller

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// ConditionTiersBound says whether the Models-as-a-Service tiers a
// published service names may call it: True when its model-user Role and
// tier RoleBindings are applied, False when the tiers annotation or the
// tier list is bad. It is not part of Ready: the model serves either way.
// A service that is not published (or a controller without MaaS) has none.
const ConditionTiersBound = "TiersBound"

// Reasons of ConditionTiersBound, and of the Warning event that goes with
// the False ones.
const (
	ReasonTiersBound        = "Bound"
	ReasonInvalidTiers      = "InvalidTiersAnnotation"
	ReasonInvalidTierConfig = "InvalidTierConfig"
)

// indexPublished indexes the services published to MaaS (they carry the
// tiers annotation) under "true": a change of the tier list reconciles
// them and no others.
const indexPublished = "odh-serving.published"

// tierSource reads the tier list from its ConfigMap in the cache, parsing
// it once per resourceVersion.
type tierSource struct {
	reader client.Reader
	key    types.NamespacedName
	prefix string

	mu              sync.Mutex
	resourceVersion string
	parsed          *tier.Config
	err             error
}

// config returns the tier list, or an error naming the ConfigMap and what
// is wrong with it.
func (s *tierSource) config(ctx context.Context) (*tier.Config, error) {
	cm := &corev1.ConfigMap{}
	if err := s.reader.Get(ctx, s.key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the tier ConfigMap %s is not found", s.key)
		}
		return nil, fmt.Errorf("get the tier ConfigMap %s: %w", s.key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cm.ResourceVersion != s.resourceVersion {
		s.resourceVersion = cm.ResourceVersion
		data, ok := cm.Data[tier.ConfigMapKey]
		if !ok {
			s.parsed, s.err = nil, fmt.Errorf("the tier ConfigMap %s has no key %s", s.key, tier.ConfigMapKey)
		} else if s.parsed, s.err = tier.Parse(data, s.prefix); s.err != nil {
			s.err = fmt.Errorf("the tier ConfigMap %s: %w", s.key, s.err)
		}
	}
	return s.parsed, s.err
}

// tiersFor returns the tier list to render svc with: nil when MaaS is off
// or the service is not published. A published service whose tier list
// cannot be read gets the error as its access error.
func (r *Reconciler) tiersFor(ctx context.Context, p *pass) *tier.Config {
	if r.tiers == nil {
		return nil
	}
	if _, published := p.svc.Annotations[tier.AnnotationTiers]; !published {
		return nil
	}
	cfg, err := r.tiers.config(ctx)
	if err != nil {
		p.accessErr = fmt.Errorf("annotation %s: no tier list to check it against: %w", tier.AnnotationTiers, err)
		p.accessReason = ReasonInvalidTierConfig
		return nil
	}
	return cfg
}

// access sets TiersBound from what the engine built, and records a
// Warning event when it turns False or its message changes, not on every
// pass: in steady state nothing is written.
func (r *Reconciler) access(p *pass) {
	if p.accessErr == nil && p.res.Access.Err != nil {
		p.accessErr, p.accessReason = p.res.Access.Err, ReasonInvalidTiers
	}
	_, published := p.svc.Annotations[tier.AnnotationTiers]
	switch {
	case r.tiers == nil || !published || p.plan.Stopped:
		p.conds.remove(ConditionTiersBound)
	case p.accessErr != nil:
		msg := p.accessErr.Error() + "; the tiers' access is left as it was until this is fixed"
		var before metav1.Condition
		if c := p.conds.get(ConditionTiersBound); c != nil {
			before = *c // set changes it in place
		}
		p.conds.set(ConditionTiersBound, metav1.ConditionFalse, p.accessReason, msg)
		if after := p.conds.get(ConditionTiersBound); before.Status != after.Status || before.Message != after.Message {
			r.recorder.Event(p.svc, corev1.EventTypeWarning, p.accessReason, after.Message)
		}
	default:
		p.conds.set(ConditionTiersBound, metav1.ConditionTrue, ReasonTiersBound, p.res.Access.String())
	}
}

// keepAccess adds the service's live access objects to keep when this
// pass could not work out its tiers: they stay as they were, neither
// half-updated nor removed, until the annotation or tier list is fixed.
func (r *Reconciler) keepAccess(ctx context.Context, p *pass, keep map[childID]bool) error {
	if p.accessErr == nil {
		return nil
	}
	for _, k := range []kind{{gvk: gvkRole}, {gvk: gvkRoleBinding}} {
		list := k.newList()
		err := r.client.List(ctx, list, client.InNamespace(p.svc.Namespace), client.MatchingFields{indexChildOf: p.svc.Name},
			client.MatchingLabels{convention.LabelPartOf: convention.PartOf, convention.LabelName: p.svc.Name, convention.LabelComponent: build.ComponentModelAccess})
		if err != nil {
			return fmt.Errorf("list %s children of %s/%s: %w", k.gvk.Kind, p.svc.Namespace, p.svc.Name, err)
		}
		err = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				keep[childID{gvk: k.gvk, name: obj.GetName()}] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// forTierConfig maps the tier ConfigMap to every published service.
func (r *Reconciler) forTierConfig(ctx context.Context, _ client.Object) []reconcile.Request {
	q := requests{}
	q.addAll(r.servicesFor(ctx, "", indexPublished, "true"))
	return q.list()
}

// published is the indexPublished key of a service.
func published(o client.Object) []string {
	if _, ok := o.GetAnnotations()[tier.AnnotationTiers]; ok {
		return []string{"true"}
	}
	return nil
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// ConditionTiersBound says whether the Models-as-a-Service tiers a
// published service names may call it: True when its model-user Role and
// tier RoleBindings are applied, False when the tiers annotation or the
// tier list is bad, or (CRDMissing) when its MaaS route is withheld for
// want of Kuadrant's AuthPolicy CRD. Bad input fails closed, as in the MaaS API server's
// models (tier.Config.Grant): what it does not grant is unbound. It is not
// part of Ready: the model serves either way. A service that is not
// published (or a controller without MaaS) has none.
const ConditionTiersBound = "TiersBound"

// Reasons of ConditionTiersBound, and of the Warning event that goes with
// the False ones.
const (
	ReasonTiersBound = "Bound"
	// ReasonInvalidTiers: the annotation is not a JSON list of tier
	// names; no tier is bound.
	ReasonInvalidTiers = "InvalidTiersAnnotation"
	// ReasonUnknownTiers: the annotation names tiers the list lacks; they
	// are not bound, the others are.
	ReasonUnknownTiers = "UnknownTiers"
	// ReasonInvalidTierConfig: the tier list is missing or bad; no tier is
	// bound.
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

// badTierConfig is why the tier list cannot be used: the ConfigMap is
// missing, has no key tiers, or does not parse (tier's errors, which name
// the ConfigMap and the key). Any other error reading it is the cache's,
// and is retried.
type badTierConfig struct{ error }

func (e badTierConfig) Unwrap() error { return e.error }

// config returns the tier list, a badTierConfig, or the error of reading
// the ConfigMap.
func (s *tierSource) config(ctx context.Context) (*tier.Config, error) {
	cm := &corev1.ConfigMap{}
	if err := s.reader.Get(ctx, s.key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, badTierConfig{tier.NotFound(s.key.Namespace, s.key.Name)}
		}
		return nil, fmt.Errorf("get the tier ConfigMap %s: %w", s.key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cm.ResourceVersion != s.resourceVersion {
		s.resourceVersion = cm.ResourceVersion
		if s.parsed, s.err = tier.FromConfigMap(cm, s.prefix); s.err != nil {
			s.err = badTierConfig{s.err}
		}
	}
	return s.parsed, s.err
}

// tiersFor returns the tier list to render svc with: nil when MaaS is off
// or the service is not published. When the tier list is bad, it is nil
// too, so that no tier is bound (the MaaS API server refuses every
// request then), and the error becomes the service's access error.
func (r *Reconciler) tiersFor(ctx context.Context, p *pass) (*tier.Config, error) {
	if r.tiers == nil {
		return nil, nil
	}
	if _, published := p.svc.Annotations[tier.AnnotationTiers]; !published {
		return nil, nil
	}
	cfg, err := r.tiers.config(ctx)
	var bad badTierConfig
	switch {
	case errors.As(err, &bad):
		p.accessErr = fmt.Errorf("annotation %s: no tier list to check it against: %w", tier.AnnotationTiers, err)
		p.accessReason = ReasonInvalidTierConfig
		return nil, nil
	case err != nil:
		return nil, err
	}
	return cfg, nil
}

// access sets TiersBound from what the engine built, and records a
// Warning event when it turns False or its message changes, not on every
// pass: in steady state nothing is written.
func (r *Reconciler) access(p *pass) {
	if p.accessErr == nil && p.res.Access.Err != nil {
		p.accessErr, p.accessReason = p.res.Access.Err, ReasonInvalidTiers
		if len(p.res.Access.Unknown) > 0 {
			p.accessReason = ReasonUnknownTiers
		}
	}
	_, published := p.svc.Annotations[tier.AnnotationTiers]
	switch {
	case r.tiers == nil || !published || p.plan.Stopped:
		p.conds.remove(ConditionTiersBound)
	case p.accessErr != nil:
		msg := p.accessErr.Error() + "; " + p.res.Access.String()
		var before metav1.Condition
		if c := p.conds.get(ConditionTiersBound); c != nil {
			before = *c // set changes it in place
		}
		p.conds.set(ConditionTiersBound, metav1.ConditionFalse, p.accessReason, msg)
		if after := p.conds.get(ConditionTiersBound); before.Status != after.Status || before.Message != after.Message {
			r.recorder.Event(p.svc, corev1.EventTypeWarning, p.accessReason, after.Message)
		}
	case p.maasWithheld != "":
		p.conds.set(ConditionTiersBound, metav1.ConditionFalse, ReasonCRDMissing, p.res.Access.String()+"; "+p.maasWithheld)
	default:
		p.conds.set(ConditionTiersBound, metav1.ConditionTrue, ReasonTiersBound, p.res.Access.String())
	}
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

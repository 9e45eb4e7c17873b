package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// verdict is the readiness of one object: a condition status, reason and
// message.
type verdict struct {
	ok      bool
	reason  string
	message string
}

func notReady(reason, format string, args ...any) verdict {
	return verdict{reason: reason, message: fmt.Sprintf(format, args...)}
}

// fresh returns the condition of type t unless it describes an older
// generation of its object than the current one.
func fresh(conds []metav1.Condition, t string, generation int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, t)
	if c == nil || (c.ObservedGeneration != 0 && c.ObservedGeneration < generation) {
		return nil
	}
	return c
}

// deploymentVerdict mirrors the Deployment's Available condition; a
// rollout the Deployment controller has not seen yet is Progressing.
func deploymentVerdict(d *appsv1.Deployment) verdict {
	if d.Status.ObservedGeneration < d.Generation {
		return notReady(ReasonProgressing, "Deployment %s: the rollout of generation %d has not been observed yet", d.Name, d.Generation)
	}
	for _, c := range d.Status.Conditions {
		if c.Type != appsv1.DeploymentAvailable {
			continue
		}
		msg := fmt.Sprintf("Deployment %s: %s", d.Name, c.Message)
		return verdict{ok: c.Status == "True", reason: orDefault(c.Reason, ReasonProgressing), message: msg}
	}
	return notReady(ReasonProgressing, "Deployment %s: not available yet", d.Name)
}

// lwsVerdict mirrors the LeaderWorkerSet's Available condition. When a
// rollout starts, the operator turns Available False but leaves its reason
// and message ("All replicas are ready") as they were; its True
// UpdateInProgress or Progressing condition then says what is going on.
func lwsVerdict(l *lwsv1.LeaderWorkerSet) verdict {
	c := fresh(l.Status.Conditions, string(lwsv1.LeaderWorkerSetAvailable), l.Generation)
	if c == nil || c.Status != metav1.ConditionTrue {
		for _, t := range []lwsv1.LeaderWorkerSetConditionType{lwsv1.LeaderWorkerSetUpdateInProgress, lwsv1.LeaderWorkerSetProgressing} {
			if p := fresh(l.Status.Conditions, string(t), l.Generation); p != nil && p.Status == metav1.ConditionTrue {
				c = p
				break
			}
		}
	}
	if c == nil {
		return notReady(ReasonProgressing, "LeaderWorkerSet %s: not available yet", l.Name)
	}
	ok := c.Type == string(lwsv1.LeaderWorkerSetAvailable) && c.Status == metav1.ConditionTrue
	return verdict{ok: ok, reason: orDefault(c.Reason, ReasonProgressing), message: fmt.Sprintf("LeaderWorkerSet %s: %s", l.Name, c.Message)}
}

// gatewayVerdict needs Programmed True for the current generation.
func gatewayVerdict(g *gatewayv1.Gateway) verdict {
	c := fresh(g.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed), g.Generation)
	if c == nil || c.Status != metav1.ConditionTrue {
		msg := "not programmed yet"
		if c != nil && c.Message != "" {
			msg = c.Message
		}
		return notReady(ReasonGatewaysNotReady, "Gateway %s/%s: %s", g.Namespace, g.Name, msg)
	}
	return verdict{ok: true, reason: ReasonReady}
}

// routeVerdict needs every parent to have Accepted the route, with
// resolved references. A backend kind the gateway rejects (InvalidKind) is
// tolerated while the route also sends traffic to the other pool group.
// Conditions of an older generation of the route are ignored.
func routeVerdict(rt *gatewayv1.HTTPRoute, phase convention.Phase) verdict {
	seen := false
	for _, p := range rt.Status.Parents {
		accepted := fresh(p.Conditions, string(gatewayv1.RouteConditionAccepted), rt.Generation)
		if accepted == nil {
			continue
		}
		seen = true
		if accepted.Status != metav1.ConditionTrue {
			return notReady(ReasonRoutesNotReady, "HTTPRoute %s: parent %s: not accepted: %s", rt.Name, p.ParentRef.Name, accepted.Message)
		}
		resolved := fresh(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs), rt.Generation)
		if resolved == nil || resolved.Status == metav1.ConditionTrue {
			continue
		}
		bothGroups := phase == convention.PhaseDual || phase == convention.PhaseV1
		if resolved.Reason == string(gatewayv1.RouteReasonInvalidKind) && bothGroups {
			continue
		}
		return notReady(ReasonRoutesNotReady, "HTTPRoute %s: parent %s: references not resolved (%s): %s", rt.Name, p.ParentRef.Name, resolved.Reason, resolved.Message)
	}
	if !seen {
		return notReady(ReasonRoutesNotReady, "HTTPRoute %s: no gateway has accepted it yet", rt.Name)
	}
	return verdict{ok: true, reason: ReasonReady}
}

// parentsVerdict needs at least one parent, and Accepted and ResolvedRefs
// True on every parent, for the current generation.
func parentsVerdict(what string, generation int64, parents [][]metav1.Condition) verdict {
	if len(parents) == 0 {
		return notReady(ReasonPoolNotReady, "%s: no gateway has accepted it yet", what)
	}
	for _, conds := range parents {
		for _, t := range []string{"Accepted", "ResolvedRefs"} {
			c := fresh(conds, t, generation)
			if c == nil || c.Status != metav1.ConditionTrue {
				msg := "not reported yet"
				if c != nil {
					msg = fmt.Sprintf("%s (%s)", c.Message, c.Reason)
				}
				return notReady(ReasonPoolNotReady, "%s: %s: %s", what, t, msg)
			}
		}
	}
	return verdict{ok: true, reason: ReasonReady}
}

func poolV1Verdict(p *gieapiv1.InferencePool) verdict {
	parents := make([][]metav1.Condition, 0, len(p.Status.Parents))
	for _, s := range p.Status.Parents {
		parents = append(parents, s.Conditions)
	}
	return parentsVerdict(fmt.Sprintf("InferencePool %s (%s)", p.Name, build.GroupPoolV1), p.Generation, parents)
}

func poolAlpha2Verdict(p *gieapixv1alpha2.InferencePool) verdict {
	parents := make([][]metav1.Condition, 0, len(p.Status.Parents))
	for _, s := range p.Status.Parents {
		parents = append(parents, s.Conditions)
	}
	return parentsVerdict(fmt.Sprintf("InferencePool %s (%s)", p.Name, build.GroupPoolV1alpha2), p.Generation, parents)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

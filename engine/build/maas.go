package build

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// MaaSRouteSuffix names the route of a service published to
// Models-as-a-Service: <service>-kserve-maas-route; its AuthPolicy is
// <service>-kserve-maas-route-authn.
const MaaSRouteSuffix = "-kserve-maas-route"

// ComponentMaaSAuth labels the AuthPolicy of a service's MaaS route.
const ComponentMaaSAuth = "llminferenceservice-maas-auth"

// TierReviewPath is where the MaaS API server's tierreviews are, under
// the cluster's API server.
const TierReviewPath = "/apis/modelserving.opendatahub.io/v1alpha1/tierreviews"

// maasRoute publishes the service on the Models-as-a-Service gateway, when
// the options name one: an HTTPRoute of its own, attached to that gateway
// only, with the managed route's rules (spec, already checked and with its
// backends rewritten), and the AuthPolicy that checks MaaS callers against
// this service by name (maasPolicy).
//
// The managed route does not attach to the MaaS gateway: the policies on
// it (the ingress gateway's, or the service's own anonymous one when the
// enable-auth annotation opens it) never apply to MaaS requests, and the
// MaaS checks never depend on the path's words. The route keeps every rule
// of the managed route, the publisher paths and the model-header rules
// too: the policy authorizes against this service whatever rule matched,
// so each shape a client addresses the service by on the ingress works on
// the MaaS gateway with the same checks.
//
// The caller's MaaS token is dropped before the request goes upstream
// (dropAuthorization, as stripCredentials does on the managed route, but
// whatever --enable-auth says): it is good on the MaaS gateway for every
// model of the caller's tier, and the model server's image is the service
// author's.
func (b *builder) maasRoute(managed *gatewayv1.HTTPRouteSpec, annotations map[string]string) error {
	m := b.opts.MaaS
	if m.Gateway.Name == "" {
		return nil
	}
	spec := gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: b.withGateway(nil, m.Gateway)},
		Hostnames:       managed.Hostnames,
		Rules:           managed.Rules,
	}
	spec = *spec.DeepCopy()
	if err := dropAuthorization(spec.Rules); err != nil {
		return fmt.Errorf("the MaaS route: %w", err)
	}
	meta := b.meta(b.names.maasRoute, ComponentRouter)
	meta.Annotations = annotations
	b.add(&gatewayv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: meta,
		Spec:       spec,
	})
	b.add(b.maasPolicy())
	return nil
}

// maasPolicy is the AuthPolicy of the service's MaaS route: the MaaS
// checks, with the service named literally.
//
//   - authentication: a MaaS token (a TokenReview for the MaaS audience);
//     none, or another audience's: 401;
//   - metadata "tier": the caller's tier, a TierReview POSTed to the MaaS
//     API server through the cluster's API server with the policy engine's
//     own token (sharedSecretRef), cached per user;
//   - authorization: "tier-resolved" refuses a caller no tier lists, and
//     "model-access" is a SubjectAccessReview post on this
//     LLMInferenceService, by namespace and name as values (the
//     controller's RoleBindings let the published tiers post);
//   - response: the identity the TokenRateLimitPolicy counts by
//     (auth.identity.userid, auth.identity.tier).
//
// It does not read the enable-auth annotation: that opt-out opens the
// managed route only, never the MaaS gateway.
func (b *builder) maasPolicy() Object {
	m := b.opts.MaaS
	tier := map[string]any{
		"http": map[string]any{
			"url":         strings.TrimSuffix(m.APIServerURL, "/") + TierReviewPath,
			"method":      "POST",
			"contentType": "application/json",
			"body": map[string]any{
				"expression": `{"apiVersion": "modelserving.opendatahub.io/v1alpha1", "kind": "TierReview", ` +
					`"spec": {"user": auth.identity.user.username, "groups": auth.identity.user.groups}}`,
			},
			"sharedSecretRef": map[string]any{"name": m.TierReviewSecret, "key": "token"},
			"credentials":     map[string]any{"authorizationHeader": map[string]any{"prefix": "Bearer"}},
		},
	}
	if m.TierCacheTTL > 0 {
		tier["cache"] = map[string]any{
			"key": map[string]any{"expression": "auth.identity.user.username"},
			"ttl": int64(m.TierCacheTTL),
		}
	}
	return b.custom(convention.KuadrantGroup+"/v1", "AuthPolicy", b.names.maasRouteAuth, ComponentMaaSAuth, map[string]any{
		"targetRef": map[string]any{
			"group": gatewayv1.GroupName,
			"kind":  "HTTPRoute",
			"name":  b.names.maasRoute,
		},
		"rules": map[string]any{
			"authentication": map[string]any{
				"maas-token": map[string]any{
					"credentials":           map[string]any{"authorizationHeader": map[string]any{"prefix": "Bearer"}},
					"kubernetesTokenReview": map[string]any{"audiences": []any{m.TokenAudience}},
				},
			},
			"metadata": map[string]any{"tier": tier},
			"authorization": map[string]any{
				"tier-resolved": map[string]any{
					"patternMatching": map[string]any{"patterns": []any{
						map[string]any{"predicate": `has(auth.metadata.tier.status.tier) && auth.metadata.tier.status.tier != ""`},
					}},
				},
				"model-access": map[string]any{
					"kubernetesSubjectAccessReview": map[string]any{
						"user":                map[string]any{"expression": "auth.identity.user.username"},
						"authorizationGroups": map[string]any{"expression": "auth.identity.user.groups"},
						"resourceAttributes": map[string]any{
							"group":     map[string]any{"value": "serving.kserve.io"},
							"resource":  map[string]any{"value": "llminferenceservices"},
							"namespace": map[string]any{"value": b.svc.Namespace},
							"name":      map[string]any{"value": b.svc.Name},
							"verb":      map[string]any{"value": "post"},
						},
					},
				},
			},
			"response": map[string]any{
				"success": map[string]any{
					"filters": map[string]any{
						"identity": map[string]any{
							"json": map[string]any{
								"properties": map[string]any{
									"userid": map[string]any{"expression": "auth.identity.user.username"},
									"tier":   map[string]any{"expression": "auth.metadata.tier.status.tier"},
								},
							},
						},
					},
				},
			},
		},
	})
}

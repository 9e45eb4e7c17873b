package tenancy

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/presets"
)

// TestRoutesCannotCaptureAnotherTenant attacks team-a's callers from
// team-b (issue #32, item 2). Gateway API sends a request to the most
// specific match across every route of a gateway: an Exact path before
// team-a's PathPrefix, and of equal paths the match with more header
// matches. A team-b
// service whose managed route matched /team-a/qwen/v1/chat/completions
// exactly, or the model header publishers/team-a/models/..., took team-a's
// callers, with their prompts and tokens, to team-b's pods: render and the
// webhook checked the route's syntax only. Now render (the engine, which
// the controller runs too) and the webhook refuse such a service with the
// same words, naming the field, and team-a's callers reach team-a.
func TestRoutesCannotCaptureAnotherTenant(t *testing.T) {
	h := New(t)
	modelRouting := map[string]string{build.AnnotationModelBasedRouting: "true"}
	qwen := h.Deploy(t, Service(TeamA, "qwen", modelRouting), h.Options())
	caller := types.NamespacedName{Namespace: TeamA, Name: "caller"}
	h.Grant(t, TeamA, "qwen", caller)
	token := h.Token(t, caller)
	// team-b may call its own services, as any tenant may.
	teamB := types.NamespacedName{Namespace: TeamB, Name: "owner"}
	h.Grant(t, TeamB, "", teamB)

	header := map[string]string{build.ModelHeader: build.PublisherName(TeamA, Model)}
	for _, c := range []struct {
		what  string
		name  string // team-b's service
		match gatewayv1.HTTPRouteMatch
		field string
		// sent is team-a's caller's request that the route would take.
		sent Request
	}{{
		what:  "team-a's path, Exact",
		name:  "path-capture",
		match: gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchExact), Value: ptr("/team-a/qwen/v1/chat/completions")}},
		field: "spec.router.route.http.spec.rules[0].matches[0].path.value: Forbidden: ",
		sent:  Request{Path: "/team-a/qwen/v1/chat/completions", Token: token},
	}, {
		what: "team-a's model header",
		name: "header-capture",
		match: gatewayv1.HTTPRouteMatch{
			Path: &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchExact), Value: ptr("/v1/chat/completions")},
			// A second header every caller sends makes the match more
			// specific than team-a's own header rule, so it wins.
			Headers: []gatewayv1.HTTPHeaderMatch{
				{Name: build.ModelHeader, Value: build.PublisherName(TeamA, Model)},
				{Name: "Content-Type", Value: "application/json"},
			},
		},
		field: "spec.router.route.http.spec.rules[0].matches[0].headers[0].value: Forbidden: ",
		sent:  Request{Path: "/v1/chat/completions", Token: token, Header: header},
	}} {
		t.Run(c.what, func(t *testing.T) {
			evil := captureService(c.name, c.match)
			_, renderErr := engine.Render(t.Context(), evil, catalog(t), h.Options())
			if renderErr == nil {
				// The route went through: apply it as the controller would,
				// and show whose pods answer team-a's caller now.
				t.Errorf("render accepted team-b's route that matches %s", c.what)
				h.Deploy(t, evil, h.Options())
			} else if !strings.Contains(renderErr.Error(), c.field) {
				t.Errorf("render refused it, but not naming %s: %v", c.field, renderErr)
			}
			admitErr := h.C.Create(t.Context(), evil.DeepCopy())
			if admitErr == nil {
				t.Errorf("the API server admitted team-b's service that matches %s", c.what)
				_ = h.C.Delete(t.Context(), evil)
			} else if !apierrors.IsInvalid(admitErr) {
				t.Errorf("the API server refused it, but not as invalid: %v", admitErr)
			}
			var re *build.RouteError
			if errors.As(renderErr, &re) && admitErr != nil {
				for _, e := range re.Errs {
					if !strings.Contains(admitErr.Error(), e.Error()) {
						t.Errorf("the webhook's refusal:\n  %v\ndoes not carry render's words:\n  %s", admitErr, e.Error())
					}
				}
				t.Logf("render: %v\nwebhook: %v", renderErr, admitErr)
			}

			r := h.Send(t, c.sent)
			if r.Code != http.StatusOK || !strings.HasPrefix(r.Pod(), "qwen-") {
				t.Errorf("team-a's caller (%s): %s; want 200 from team-a's pod (%v)", c.sent.Path, r, qwen.Pods)
			}
		})
	}
}

// captureService is team-b's service name whose managed route has the
// one match m, to its own pods. team-b opens it to anonymous callers
// (its own choice for its own service): the route's AuthPolicy, which
// names team-b's service, then lets team-a's callers through to team-b's
// pods, tokens and all.
func captureService(name string, m gatewayv1.HTTPRouteMatch) *v1alpha2.LLMInferenceService {
	svc := Service(TeamB, name, map[string]string{build.AnnotationModelBasedRouting: "true", convention.AnnotationEnableAuth: "false"})
	svc.Spec.Router.Route.HTTP = &v1alpha2.HTTPRouteSpec{Spec: &gatewayv1.HTTPRouteSpec{
		CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
			Name: convention.IngressGatewayName, Namespace: ptr(gatewayv1.Namespace(engine.DefaultSystemNamespace)),
		}}},
		Rules: []gatewayv1.HTTPRouteRule{{
			Matches: []gatewayv1.HTTPRouteMatch{m},
			Filters: []gatewayv1.HTTPRouteFilter{{Type: gatewayv1.HTTPRouteFilterURLRewrite, URLRewrite: &gatewayv1.HTTPURLRewriteFilter{
				Path: &gatewayv1.HTTPPathModifier{Type: gatewayv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr("/v1/chat/completions")},
			}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Group: ptr(gatewayv1.Group(build.GroupPoolV1)), Kind: ptr(gatewayv1.Kind("InferencePool")),
				Name: gatewayv1.ObjectName(name + "-inference-pool"), Port: ptr(gatewayv1.PortNumber(build.WorkloadPort)),
			}}}},
		}},
	}}
	return svc
}

func catalog(t *testing.T) *preset.Catalog {
	t.Helper()
	c, err := presets.Default(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

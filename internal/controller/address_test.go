package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

func testRoute(hostnames []string, parents ...gatewayv1.ParentReference) *gatewayv1.HTTPRoute {
	prefix := gatewayv1.PathMatchPathPrefix
	long, short := "/ns/svc/v1/completions", "/ns/svc"
	pool, svc := gatewayv1.Kind("InferencePool"), gatewayv1.Kind("Service")
	rt := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-kserve-route"}}
	rt.Spec.ParentRefs = parents
	for _, h := range hostnames {
		rt.Spec.Hostnames = append(rt.Spec.Hostnames, gatewayv1.Hostname(h))
	}
	rt.Spec.Rules = []gatewayv1.HTTPRouteRule{
		{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &long}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Kind: &pool, Name: "p"}}}}},
		{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &short}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Kind: &svc, Name: "s"}}}}},
	}
	return rt
}

func parent(ns, name, section string) gatewayv1.ParentReference {
	p := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	if ns != "" {
		n := gatewayv1.Namespace(ns)
		p.Namespace = &n
	}
	if section != "" {
		s := gatewayv1.SectionName(section)
		p.SectionName = &s
	}
	return p
}

func testGateway(ns, name string, addr string, listeners ...gatewayv1.Listener) *gatewayv1.Gateway {
	g := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Spec.Listeners = listeners
	if addr != "" {
		g.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: addr}}
	}
	return g
}

func TestRouteAddresses(t *testing.T) {
	wildcard := gatewayv1.Hostname("*.apps.example.com")
	exact := gatewayv1.Hostname("llm.example.com")
	gateways := map[gatewayKey]*gatewayv1.Gateway{
		{"sys", "ingress"}: testGateway("sys", "ingress", "203.0.113.10",
			gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
			gatewayv1.Listener{Name: "https", Port: 8443, Protocol: gatewayv1.HTTPSProtocolType}),
		{"sys", "internal"}: testGateway("sys", "internal", "10.0.0.5", gatewayv1.Listener{Name: "https", Port: 443, Protocol: gatewayv1.HTTPSProtocolType}),
		{"sys", "wild"}:     testGateway("sys", "wild", "", gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &wildcard}),
		{"other", "exact"}:  testGateway("other", "exact", "", gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: &exact}),
		{"sys", "noaddr"}:   testGateway("sys", "noaddr", "", gatewayv1.Listener{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType}),
	}
	internal := gatewayKey{"sys", "internal"}
	for name, tc := range map[string]struct {
		route *gatewayv1.HTTPRoute
		want  []v1alpha2.Address
	}{
		"first listener, gateway address": {testRoute(nil, parent("sys", "ingress", "")),
			[]v1alpha2.Address{{Name: "gateway-external", URL: "http://203.0.113.10/ns/svc"}}},
		"listener by section, port kept": {testRoute(nil, parent("sys", "ingress", "https")),
			[]v1alpha2.Address{{Name: "gateway-external", URL: "https://203.0.113.10:8443/ns/svc"}}},
		"route hostname wins": {testRoute([]string{"model.example.com"}, parent("sys", "ingress", "")),
			[]v1alpha2.Address{{Name: "gateway-external", URL: "http://model.example.com/ns/svc"}}},
		"wildcard listener": {testRoute(nil, parent("sys", "wild", "")),
			[]v1alpha2.Address{{Name: "gateway-external", URL: "http://svc-kserve-route-ns.apps.example.com/ns/svc"}}},
		"listener hostname": {testRoute(nil, parent("other", "exact", "")),
			[]v1alpha2.Address{{Name: "gateway-external", URL: "http://llm.example.com/ns/svc"}}},
		"internal gateway": {testRoute(nil, parent("sys", "internal", "")),
			[]v1alpha2.Address{{Name: "gateway-internal", URL: "https://10.0.0.5/ns/svc"}}},
		"no address, unknown section, missing gateway": {testRoute(nil, parent("sys", "noaddr", ""), parent("sys", "ingress", "nope"), parent("sys", "gone", "")), nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := routeAddresses(tc.route, gateways, internal); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("addresses = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPrimaryURL(t *testing.T) {
	addrs := sortAddresses([]v1alpha2.Address{
		{Name: "gateway-internal", URL: "https://gw.sys.svc.cluster.local/ns/svc"},
		{Name: "gateway-external", URL: "http://10.0.0.1/ns/svc"},
		{Name: "gateway-external", URL: "http://llm.example.com/ns/svc"},
		{Name: "gateway-external", URL: "http://llm.example.com/ns/svc"},
	})
	if len(addrs) != 3 {
		t.Errorf("addresses not de-duplicated: %v", addrs)
	}
	if got := primaryURL(addrs); got != "http://llm.example.com/ns/svc" {
		t.Errorf("primary URL = %q, want the public host", got)
	}
	private := []v1alpha2.Address{{Name: "gateway-external", URL: "http://10.0.0.1/ns/svc"}}
	if got := primaryURL(private); got != "http://10.0.0.1/ns/svc" {
		t.Errorf("primary URL = %q, want the only address", got)
	}
	if primaryURL(nil) != "" {
		t.Error("a URL from no addresses")
	}
}

// TestRoutePathSkipsHeaderMatches: KServe's header-only rule to the workload
// Service matches every path (PathPrefix /) with the model header; it must
// not make the service's URL the gateway's root.
func TestRoutePathSkipsHeaderMatches(t *testing.T) {
	rt := testRoute(nil, parent("sys", "ingress", ""))
	prefix, root := gatewayv1.PathMatchPathPrefix, "/"
	svc := gatewayv1.Kind("Service")
	rt.Spec.Rules = append(rt.Spec.Rules, gatewayv1.HTTPRouteRule{
		Matches: []gatewayv1.HTTPRouteMatch{{
			Path:    &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &root},
			Headers: []gatewayv1.HTTPHeaderMatch{{Name: "X-Gateway-Model-Name", Value: "publishers/ns/models/m"}},
		}},
		BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{Kind: &svc, Name: "s"}}}},
	})
	if got := routePath(rt); got != "/ns/svc" {
		t.Errorf("routePath = %q, want /ns/svc", got)
	}
	// A publisher path to the Service, shorter than the service's path, is the
	// model's address, not the service's.
	publisher := "/publishers/ns/models/m"
	rt.Spec.Rules[1].Matches = append(rt.Spec.Rules[1].Matches, gatewayv1.HTTPRouteMatch{Path: &gatewayv1.HTTPPathMatch{Type: &prefix, Value: &publisher}})
	svcPath := "/ns/a-service-name-longer-than-the-publisher-path"
	rt.Spec.Rules[1].Matches[0].Path.Value = &svcPath
	if got := routePath(rt); got != svcPath {
		t.Errorf("routePath = %q, want %s", got, svcPath)
	}
}

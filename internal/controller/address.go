package controller

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// Address names in status.addresses.
const (
	AddressGatewayExternal = "gateway-external"
	AddressGatewayInternal = "gateway-internal"
	// AddressInternal is the workload Service, for a service without a
	// route.
	AddressInternal = "internal"
)

// gatewayKey is a Gateway's namespace/name.
type gatewayKey struct{ namespace, name string }

func (k gatewayKey) String() string { return k.namespace + "/" + k.name }

// parentGateways are the Gateways a route attaches to.
func parentGateways(rt *gatewayv1.HTTPRoute) []gatewayKey {
	var out []gatewayKey
	for _, p := range rt.Spec.ParentRefs {
		if p.Group != nil && *p.Group != gatewayv1.GroupName {
			continue
		}
		if p.Kind != nil && *p.Kind != "Gateway" {
			continue
		}
		k := gatewayKey{namespace: rt.Namespace, name: string(p.Name)}
		if p.Namespace != nil && *p.Namespace != "" {
			k.namespace = string(*p.Namespace)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// defaultPorts are left out of URLs.
var defaultPorts = map[string]int{"http": 80, "https": 443}

// routeAddresses are the URLs a route is reachable at through its Gateways:
// the listener (by sectionName, else the first) gives the scheme and port;
// the host is the route's first hostname, else the listener's, else the
// Gateway's first address; the path is the shortest prefix of the rules
// that go to a Service. A Gateway with no address gives no URL.
func routeAddresses(rt *gatewayv1.HTTPRoute, gateways map[gatewayKey]*gatewayv1.Gateway, internal gatewayKey) []v1alpha2.Address {
	path := routePath(rt)
	var out []v1alpha2.Address
	for _, p := range rt.Spec.ParentRefs {
		if (p.Group != nil && *p.Group != gatewayv1.GroupName) || (p.Kind != nil && *p.Kind != "Gateway") {
			continue
		}
		k := gatewayKey{namespace: rt.Namespace, name: string(p.Name)}
		if p.Namespace != nil && *p.Namespace != "" {
			k.namespace = string(*p.Namespace)
		}
		gw := gateways[k]
		if gw == nil || len(gw.Spec.Listeners) == 0 {
			continue
		}
		l := gw.Spec.Listeners[0]
		if p.SectionName != nil {
			i := slices.IndexFunc(gw.Spec.Listeners, func(l gatewayv1.Listener) bool { return l.Name == *p.SectionName })
			if i < 0 {
				continue
			}
			l = gw.Spec.Listeners[i]
		}
		host := listenerHost(rt, l, gw)
		if host == "" {
			continue
		}
		scheme := "http"
		if l.Protocol == gatewayv1.HTTPSProtocolType || l.Protocol == gatewayv1.TLSProtocolType {
			scheme = "https"
		}
		if port := int(l.Port); port != 0 && port != defaultPorts[scheme] {
			host = net.JoinHostPort(host, strconv.Itoa(port))
		}
		u := url.URL{Scheme: scheme, Host: host, Path: path}
		name := AddressGatewayExternal
		if k == internal {
			name = AddressGatewayInternal
		}
		out = append(out, v1alpha2.Address{Name: name, URL: u.String()})
	}
	return out
}

func listenerHost(rt *gatewayv1.HTTPRoute, l gatewayv1.Listener, gw *gatewayv1.Gateway) string {
	for _, h := range rt.Spec.Hostnames {
		if !strings.HasPrefix(string(h), "*") {
			return string(h)
		}
	}
	if l.Hostname != nil && *l.Hostname != "" {
		h := string(*l.Hostname)
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			return rt.Name + "-" + rt.Namespace + "." + rest
		}
		return h
	}
	for _, a := range gw.Status.Addresses {
		if a.Value != "" {
			return a.Value
		}
	}
	return ""
}

// routePath is the shortest path prefix among the rules that send traffic
// to a Service (the catch-all /<namespace>/<name>), else among all rules.
// Matches that also need a header (model-based routing) do not count: a
// client cannot reach the service by their path alone. A publisher path
// (/publishers/<namespace>/models/<model>) is the model's address rather
// than the service's, and counts only when there is no other.
func routePath(rt *gatewayv1.HTTPRoute) string {
	var best [3]string // to a Service; a publisher path to a Service; any
	for _, rule := range rt.Spec.Rules {
		toService := slices.ContainsFunc(rule.BackendRefs, func(b gatewayv1.HTTPBackendRef) bool {
			return b.Kind == nil || *b.Kind == "Service"
		})
		for _, m := range rule.Matches {
			if m.Path == nil || m.Path.Value == nil || len(m.Headers) > 0 {
				continue
			}
			v := *m.Path.Value
			shorter := func(i int) {
				if best[i] == "" || len(v) < len(best[i]) {
					best[i] = v
				}
			}
			shorter(2)
			switch {
			case toService && strings.HasPrefix(v, "/publishers/"):
				shorter(1)
			case toService:
				shorter(0)
			}
		}
	}
	for _, p := range best {
		if p == "/" {
			return ""
		}
		if p != "" {
			return p
		}
	}
	return ""
}

// sortAddresses sorts and de-duplicates addresses.
func sortAddresses(a []v1alpha2.Address) []v1alpha2.Address {
	slices.SortFunc(a, func(x, y v1alpha2.Address) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return strings.Compare(x.URL, y.URL)
	})
	return slices.CompactFunc(a, func(x, y v1alpha2.Address) bool { return x.Name == y.Name && x.URL == y.URL })
}

// primaryURL is the first external URL: a gateway-external address whose
// host is neither a private IP nor a cluster-local name. Without one it is
// the first address.
func primaryURL(a []v1alpha2.Address) string {
	for _, addr := range a {
		if addr.Name == AddressGatewayExternal && external(addr.URL) {
			return addr.URL
		}
	}
	if len(a) > 0 {
		return a[0].URL
	}
	return ""
}

func external(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		return !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast()
	}
	for _, suffix := range []string{".local", ".localhost", ".internal", ".svc", ".cluster.local"} {
		if strings.HasSuffix(host, suffix) || host == strings.TrimPrefix(suffix, ".") {
			return false
		}
	}
	return true
}

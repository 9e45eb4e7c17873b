package gateway

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// matched is the rule a request goes to, and the match that took it.
type matched struct {
	route *gatewayv1.HTTPRoute
	rule  *gatewayv1.HTTPRouteRule
	match gatewayv1.HTTPRouteMatch
}

// candidate is one match of one rule, with what orders it.
type candidate struct {
	matched
	routeIndex, ruleIndex int
}

// route picks the rule for a request among routes (those attached to the
// listener that took it, hostnames already checked), as Gateway API
// specifies: among the matches that match, an exact path beats a prefix, a
// longer prefix beats a shorter one, then a method match, then the most
// header matches, then the most query matches; then the oldest route, then
// the route's namespace/name, then the rule's order.
func route(routes []*gatewayv1.HTTPRoute, r *http.Request) (matched, bool) {
	var cands []candidate
	for ri, rt := range routes {
		for ui := range rt.Spec.Rules {
			rule := &rt.Spec.Rules[ui]
			matches := rule.Matches
			if len(matches) == 0 {
				// A rule without matches takes every path: prefix "/".
				matches = []gatewayv1.HTTPRouteMatch{{}}
			}
			for _, m := range matches {
				if matches1(m, r) {
					cands = append(cands, candidate{matched{rt, rule, m}, ri, ui})
				}
			}
		}
	}
	if len(cands) == 0 {
		return matched{}, false
	}
	best := slices.MinFunc(cands, func(a, b candidate) int {
		if d := comparePrecedence(a.match, b.match); d != 0 {
			return d
		}
		at, bt := a.route.CreationTimestamp, b.route.CreationTimestamp
		if !at.Equal(&bt) {
			if at.Before(&bt) {
				return -1
			}
			return 1
		}
		if d := strings.Compare(a.route.Namespace+"/"+a.route.Name, b.route.Namespace+"/"+b.route.Name); d != 0 {
			return d
		}
		return a.ruleIndex - b.ruleIndex
	})
	return best.matched, true
}

// comparePrecedence orders two matches: negative when a goes first.
func comparePrecedence(a, b gatewayv1.HTTPRouteMatch) int {
	pa, la := pathRank(a)
	pb, lb := pathRank(b)
	if pa != pb {
		return pb - pa
	}
	if la != lb {
		return lb - la
	}
	ma, mb := a.Method != nil, b.Method != nil
	if ma != mb {
		if ma {
			return -1
		}
		return 1
	}
	if d := len(b.Headers) - len(a.Headers); d != 0 {
		return d
	}
	return len(b.QueryParams) - len(a.QueryParams)
}

// pathRank is how a path match ranks: exact 2, prefix 1 (regular
// expressions 0: implementation-specific, last), and its length.
func pathRank(m gatewayv1.HTTPRouteMatch) (kind, length int) {
	typ, value := pathMatch(m)
	switch typ {
	case gatewayv1.PathMatchExact:
		return 2, len(value)
	case gatewayv1.PathMatchPathPrefix:
		return 1, len(value)
	}
	return 0, len(value)
}

func pathMatch(m gatewayv1.HTTPRouteMatch) (gatewayv1.PathMatchType, string) {
	typ, value := gatewayv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if m.Path.Value != nil {
			value = *m.Path.Value
		}
	}
	return typ, value
}

// matches1 says whether one match takes the request: all its conditions.
func matches1(m gatewayv1.HTTPRouteMatch, r *http.Request) bool {
	typ, value := pathMatch(m)
	path := r.URL.Path
	switch typ {
	case gatewayv1.PathMatchExact:
		if path != value {
			return false
		}
	case gatewayv1.PathMatchPathPrefix:
		if !prefixMatches(value, path) {
			return false
		}
	case gatewayv1.PathMatchRegularExpression:
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil || !re.MatchString(path) {
			return false
		}
	}
	if m.Method != nil && string(*m.Method) != r.Method {
		return false
	}
	for _, h := range m.Headers {
		got, ok := r.Header[http.CanonicalHeaderKey(string(h.Name))]
		if !ok || len(got) == 0 {
			return false
		}
		if h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression {
			re, err := regexp.Compile(h.Value)
			if err != nil || !re.MatchString(got[0]) {
				return false
			}
		} else if got[0] != h.Value {
			return false
		}
	}
	q := r.URL.Query()
	for _, qm := range m.QueryParams {
		got, ok := q[string(qm.Name)]
		if !ok || len(got) == 0 {
			return false
		}
		if qm.Type != nil && *qm.Type == gatewayv1.QueryParamMatchRegularExpression {
			re, err := regexp.Compile(qm.Value)
			if err != nil || !re.MatchString(got[0]) {
				return false
			}
		} else if got[0] != qm.Value {
			return false
		}
	}
	return true
}

// prefixMatches is Gateway API's PathPrefix: element-wise, so /abc does not
// take /abcd; a trailing slash in the prefix is ignored.
func prefixMatches(prefix, path string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return true
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// rewritePath applies a URLRewrite's path to a request path that match
// took: the matched prefix replaced, or the whole path.
func rewritePath(rw *gatewayv1.HTTPPathModifier, m gatewayv1.HTTPRouteMatch, path string) string {
	if rw == nil {
		return path
	}
	switch rw.Type {
	case gatewayv1.FullPathHTTPPathModifier:
		if rw.ReplaceFullPath != nil {
			return *rw.ReplaceFullPath
		}
	case gatewayv1.PrefixMatchHTTPPathModifier:
		if rw.ReplacePrefixMatch == nil {
			return path
		}
		_, prefix := pathMatch(m)
		prefix = strings.TrimSuffix(prefix, "/")
		rest := strings.TrimPrefix(path, prefix)
		repl := strings.TrimSuffix(*rw.ReplacePrefixMatch, "/")
		switch {
		case rest == "" && repl == "":
			return "/"
		case rest == "":
			return repl
		default:
			return repl + rest
		}
	}
	return path
}

// hostMatches says whether a request's host is one a route's or
// listener's hostnames admit (none admits all; *.x admits one or more
// labels before .x).
func hostMatches(hostnames []gatewayv1.Hostname, host string) bool {
	if len(hostnames) == 0 {
		return true
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	for _, h := range hostnames {
		name := string(h)
		if suffix, ok := strings.CutPrefix(name, "*"); ok {
			if strings.HasSuffix(host, suffix) && len(host) > len(suffix) {
				return true
			}
		} else if strings.EqualFold(name, host) {
			return true
		}
	}
	return false
}

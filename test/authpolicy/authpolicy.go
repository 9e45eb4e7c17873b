package authpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Request is what the gateway hands the authorizer.
type Request struct {
	Method string
	// Path is the request's path, e.g. /team-a/chat/v1/completions.
	Path string
	// Headers by lower-case name.
	Headers map[string]string
}

// Decision is the answer to a Request.
type Decision struct {
	// Code is 200 (let through), 401 (no identity) or 403 (an
	// authorization rule denied).
	Code int
	// Identity is auth.identity: the TokenReview's status, or
	// {"anonymous": true}; nil without one.
	Identity map[string]any
	// Reviews are the SubjectAccessReviews sent, in rule order, with the
	// API server's answers.
	Reviews []authzv1.SubjectAccessReview
	// Reason says why a request was not let through.
	Reason string
	// Message is the policy's own denial message
	// (response.unauthenticated or response.unauthorized), if it has one.
	Message string
	// Metadata is auth.metadata: what each metadata rule fetched, by
	// name; a call that failed is absent, as in Authorino.
	Metadata map[string]any
	// Filters are what the success response's filters export to the
	// policies after this one (the rate limits): auth.<filter>.<property>,
	// e.g. Filters["identity"]["tier"]. Only on a request let through.
	Filters map[string]map[string]any
}

// Rules are the parts of an AuthPolicy's rules this package applies.
type Rules struct {
	Authentication map[string]Authentication `json:"authentication"`
	Metadata       map[string]Metadata       `json:"metadata,omitempty"`
	Authorization  map[string]Authorization  `json:"authorization"`
	Response       *Response                 `json:"response,omitempty"`
}

// Response holds the denial messages of a policy, and the success
// filters: what it exports to the policies after it (SuccessFilter).
type Response struct {
	Unauthenticated *DenyWith `json:"unauthenticated,omitempty"`
	Unauthorized    *DenyWith `json:"unauthorized,omitempty"`
	Success         *Success  `json:"success,omitempty"`
}

// DenyWith is how a denial is answered: a literal message.
type DenyWith struct {
	Message *Value `json:"message,omitempty"`
}

// Authentication is one authentication rule.
type Authentication struct {
	Anonymous             *struct{}              `json:"anonymous,omitempty"`
	KubernetesTokenReview *KubernetesTokenReview `json:"kubernetesTokenReview,omitempty"`
	Credentials           *Credentials           `json:"credentials,omitempty"`
	Evaluation
}

// Evaluation are the fields every rule has, as the API server defaults
// them: metrics change no decision; a priority other than 0 is not
// applied (rules go by name).
type Evaluation struct {
	Metrics  bool `json:"metrics,omitempty"`
	Priority int  `json:"priority,omitempty"`
}

// KubernetesTokenReview authenticates a token with a TokenReview.
type KubernetesTokenReview struct {
	Audiences []string `json:"audiences"`
}

// Credentials say where the token is; only the Authorization header is
// known here.
type Credentials struct {
	AuthorizationHeader *struct {
		Prefix string `json:"prefix"`
	} `json:"authorizationHeader,omitempty"`
}

// Authorization is one authorization rule.
type Authorization struct {
	KubernetesSubjectAccessReview *SubjectAccessReview `json:"kubernetesSubjectAccessReview,omitempty"`
	// PatternMatching is applied with CEL predicates only (Pattern).
	PatternMatching *PatternMatching `json:"patternMatching,omitempty"`
	// OPA is applied only as the deny-all rule of a default-deny policy:
	// Rego that is exactly DenyAllRego.
	OPA *OPA `json:"opa,omitempty"`
	Evaluation
}

// OPA is an Open Policy Agent rule.
type OPA struct {
	Rego      string `json:"rego"`
	AllValues bool   `json:"allValues,omitempty"`
}

// DenyAllRego is the one Rego policy this package applies: it allows
// nothing.
const DenyAllRego = "allow = false"

// SubjectAccessReview is an authorization rule's SubjectAccessReview.
type SubjectAccessReview struct {
	User                *Value              `json:"user"`
	AuthorizationGroups *Value              `json:"authorizationGroups,omitempty"`
	Groups              []string            `json:"groups,omitempty"`
	ResourceAttributes  *ResourceAttributes `json:"resourceAttributes,omitempty"`
}

// ResourceAttributes are the resource a SubjectAccessReview asks about.
type ResourceAttributes struct {
	Group       *Value `json:"group,omitempty"`
	Resource    *Value `json:"resource,omitempty"`
	SubResource *Value `json:"subresource,omitempty"`
	Namespace   *Value `json:"namespace,omitempty"`
	Name        *Value `json:"name,omitempty"`
	Verb        *Value `json:"verb,omitempty"`
}

// Value is a literal value, or a CEL expression evaluated per request.
type Value struct {
	Value      any    `json:"value,omitempty"`
	Expression string `json:"expression,omitempty"`
	Selector   string `json:"selector,omitempty"`
}

// Parse reads the rules of a rendered AuthPolicy. A rule of a kind this
// package does not apply is an error.
func Parse(policy *unstructured.Unstructured) (*Rules, error) {
	what := fmt.Sprintf("AuthPolicy %s/%s", policy.GetNamespace(), policy.GetName())
	var raw map[string]any
	for _, path := range [][]string{{"spec", "rules"}, {"spec", "defaults", "rules"}, {"spec", "overrides", "rules"}} {
		if m, ok, _ := unstructured.NestedMap(policy.Object, path...); ok {
			raw = m
			break
		}
	}
	if raw == nil {
		return nil, fmt.Errorf("%s: no rules", what)
	}
	for key := range raw {
		if key != "authentication" && key != "metadata" && key != "authorization" && key != "response" {
			return nil, fmt.Errorf("%s: rules.%s: not applied by this test tool", what, key)
		}
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	r := &Rules{}
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("%s: rules this test tool does not apply: %w", what, err)
	}
	for name, a := range r.Authentication {
		if a.Priority != 0 {
			return nil, fmt.Errorf("%s: authentication %s: priority %d: not applied by this test tool", what, name, a.Priority)
		}
		if (a.Anonymous == nil) == (a.KubernetesTokenReview == nil) {
			return nil, fmt.Errorf("%s: authentication %s: want exactly one of anonymous and kubernetesTokenReview", what, name)
		}
	}
	for name, a := range r.Authorization {
		if a.Priority != 0 {
			return nil, fmt.Errorf("%s: authorization %s: priority %d: not applied by this test tool", what, name, a.Priority)
		}
		kinds := 0
		for _, set := range []bool{a.KubernetesSubjectAccessReview != nil, a.OPA != nil, a.PatternMatching != nil} {
			if set {
				kinds++
			}
		}
		sar := a.KubernetesSubjectAccessReview != nil && a.KubernetesSubjectAccessReview.ResourceAttributes != nil
		denyAll := a.OPA != nil && strings.TrimSpace(a.OPA.Rego) == DenyAllRego
		if kinds != 1 || (!sar && !denyAll && a.PatternMatching == nil) {
			return nil, fmt.Errorf("%s: authorization %s: only kubernetesSubjectAccessReview with resourceAttributes, patternMatching, or opa with rego %q, is applied", what, name, DenyAllRego)
		}
		if a.PatternMatching != nil {
			if err := a.PatternMatching.check(); err != nil {
				return nil, fmt.Errorf("%s: authorization %s: %w", what, name, err)
			}
		}
	}
	for name, m := range r.Metadata {
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("%s: metadata %s: %w", what, name, err)
		}
	}
	if resp := r.Response; resp != nil && resp.Success != nil {
		if err := resp.Success.check(); err != nil {
			return nil, fmt.Errorf("%s: response.success: %w", what, err)
		}
	}
	if resp := r.Response; resp != nil {
		for field, d := range map[string]*DenyWith{"unauthenticated": resp.Unauthenticated, "unauthorized": resp.Unauthorized} {
			if d != nil && d.Message != nil {
				if _, ok := d.Message.Value.(string); !ok || d.Message.Expression != "" || d.Message.Selector != "" {
					return nil, fmt.Errorf("%s: response.%s.message: only a literal string value is applied", what, field)
				}
			}
		}
	}
	return r, nil
}

// Authorizer applies rules with the API server's TokenReview and
// SubjectAccessReview; its client needs create on both (an administrator's
// will do, as Authorino's ServiceAccount does).
type Authorizer struct {
	Client client.Client
	// SecretNamespace is Authorino's namespace, where a metadata call's
	// sharedSecretRef is read (Authorino reads it from its own).
	SecretNamespace string
	// HTTP makes the metadata calls; it must trust the server's
	// certificate, as Authorino must. Nil: a policy with a metadata call
	// is an error.
	HTTP *http.Client
}

// Check decides on req.
func (a Authorizer) Check(ctx context.Context, rules *Rules, req Request) (Decision, error) {
	identity, err := a.authenticate(ctx, rules, req)
	if err != nil {
		return Decision{}, err
	}
	if identity == nil {
		return Decision{Code: http.StatusUnauthorized, Reason: "no authentication rule accepted the request", Message: rules.message(false)}, nil
	}
	d := Decision{Code: http.StatusOK, Identity: identity}
	metadata, err := a.fetchMetadata(ctx, rules, requestVar(req), identity)
	if err != nil {
		return Decision{}, err
	}
	d.Metadata = metadata
	vars := map[string]any{"request": requestVar(req), "auth": map[string]any{"identity": identity, "metadata": metadata}}
	for _, name := range sortedKeys(rules.Authorization) {
		if rules.Authorization[name].OPA != nil {
			d.Code, d.Reason, d.Message = http.StatusForbidden, fmt.Sprintf("authorization %s denied: %s", name, DenyAllRego), rules.message(true)
			return d, nil
		}
		if pm := rules.Authorization[name].PatternMatching; pm != nil {
			ok, why, err := pm.match(vars)
			if err != nil {
				return Decision{}, fmt.Errorf("authorization %s: %w", name, err)
			}
			if !ok {
				d.Code, d.Reason, d.Message = http.StatusForbidden, fmt.Sprintf("authorization %s denied: %s", name, why), rules.message(true)
				return d, nil
			}
			continue
		}
		spec, err := reviewSpec(rules.Authorization[name].KubernetesSubjectAccessReview, vars)
		if err != nil {
			return Decision{}, fmt.Errorf("authorization %s: %w", name, err)
		}
		sar := &authzv1.SubjectAccessReview{Spec: spec}
		if err := a.Client.Create(ctx, sar); err != nil {
			return Decision{}, fmt.Errorf("authorization %s: create SubjectAccessReview: %w", name, err)
		}
		d.Reviews = append(d.Reviews, *sar)
		if !sar.Status.Allowed {
			d.Code, d.Reason, d.Message = http.StatusForbidden, fmt.Sprintf("authorization %s denied: %s", name, sar.Status.Reason), rules.message(true)
			return d, nil
		}
	}
	if rules.Response != nil && rules.Response.Success != nil {
		if d.Filters, err = rules.Response.Success.export(vars); err != nil {
			return Decision{}, err
		}
	}
	return d, nil
}

// message is the policy's denial message for a request not authenticated
// or, with authenticated, not authorized; "" without one.
func (r *Rules) message(authenticated bool) string {
	if r.Response == nil {
		return ""
	}
	d := r.Response.Unauthenticated
	if authenticated {
		d = r.Response.Unauthorized
	}
	if d == nil || d.Message == nil {
		return ""
	}
	s, _ := d.Message.Value.(string)
	return s
}

// authenticate returns the identity of the first authentication rule, by
// name, that accepts the request; nil if none does. Without authentication
// rules the request is anonymous, as Authorino takes an AuthConfig that
// has none.
func (a Authorizer) authenticate(ctx context.Context, rules *Rules, req Request) (map[string]any, error) {
	if len(rules.Authentication) == 0 {
		return map[string]any{"anonymous": true}, nil
	}
	for _, name := range sortedKeys(rules.Authentication) {
		rule := rules.Authentication[name]
		if rule.Anonymous != nil {
			return map[string]any{"anonymous": true}, nil
		}
		prefix := "Bearer"
		if c := rule.Credentials; c != nil && c.AuthorizationHeader != nil && c.AuthorizationHeader.Prefix != "" {
			prefix = c.AuthorizationHeader.Prefix
		}
		token, ok := strings.CutPrefix(req.Headers["authorization"], prefix+" ")
		if !ok || token == "" {
			continue
		}
		tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: rule.KubernetesTokenReview.Audiences}}
		if err := a.Client.Create(ctx, tr); err != nil {
			return nil, fmt.Errorf("authentication %s: create TokenReview: %w", name, err)
		}
		if !tr.Status.Authenticated {
			continue
		}
		status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tr.Status)
		if err != nil {
			return nil, fmt.Errorf("authentication %s: %w", name, err)
		}
		return status, nil
	}
	return nil, nil
}

// reviewSpec evaluates a rule's SubjectAccessReview for one request.
func reviewSpec(r *SubjectAccessReview, vars map[string]any) (authzv1.SubjectAccessReviewSpec, error) {
	var spec authzv1.SubjectAccessReviewSpec
	var err error
	str := func(field string, v *Value) string {
		if v == nil || err != nil {
			return ""
		}
		var s string
		if s, err = evalString(v, vars); err != nil {
			err = fmt.Errorf("%s: %w", field, err)
		}
		return s
	}
	spec.User = str("user", r.User)
	spec.Groups = slices.Clone(r.Groups)
	if r.AuthorizationGroups != nil && err == nil {
		var groups []string
		if groups, err = evalStrings(r.AuthorizationGroups, vars); err != nil {
			err = fmt.Errorf("authorizationGroups: %w", err)
		}
		spec.Groups = append(spec.Groups, groups...)
	}
	ra := r.ResourceAttributes
	spec.ResourceAttributes = &authzv1.ResourceAttributes{
		Group: str("group", ra.Group), Resource: str("resource", ra.Resource), Subresource: str("subresource", ra.SubResource),
		Namespace: str("namespace", ra.Namespace), Name: str("name", ra.Name), Verb: str("verb", ra.Verb),
	}
	return spec, err
}

func evalString(v *Value, vars map[string]any) (string, error) {
	var s string
	err := eval(v, vars, &s)
	return s, err
}

func evalStrings(v *Value, vars map[string]any) ([]string, error) {
	var strs []string
	err := eval(v, vars, &strs)
	return strs, err
}

// eval puts into dst (*string or *[]string) the value's literal, or its
// expression evaluated with CEL.
func eval[T any](v *Value, vars map[string]any, dst *T) error {
	switch {
	case v.Selector != "":
		return fmt.Errorf("selector %q: not applied by this test tool; use expression", v.Selector)
	case v.Expression == "":
		data, err := json.Marshal(v.Value)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, dst)
	}
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("auth", cel.DynType), ext.Strings())
	if err != nil {
		return err
	}
	ast, iss := env.Compile(v.Expression)
	if iss.Err() != nil {
		return fmt.Errorf("compile %q: %w", v.Expression, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return fmt.Errorf("program %q: %w", v.Expression, err)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		return fmt.Errorf("evaluate %q: %w", v.Expression, err)
	}
	native, err := out.ConvertToNative(reflect.TypeFor[T]())
	if err != nil {
		return fmt.Errorf("evaluate %q: %w", v.Expression, err)
	}
	got, ok := native.(T)
	if !ok {
		return fmt.Errorf("evaluate %q: a %T, want a %T", v.Expression, native, *dst)
	}
	*dst = got
	return nil
}

// requestVar is the request as Authorino's CEL sees it (the fields used
// here).
func requestVar(r Request) map[string]any {
	headers := map[string]any{}
	for k, v := range r.Headers {
		headers[strings.ToLower(k)] = v
	}
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	return map[string]any{"path": r.Path, "method": method, "headers": headers}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ErrNoPolicy is returned by Find when the stream has no such AuthPolicy.
var ErrNoPolicy = errors.New("no such AuthPolicy")

// Find returns the AuthPolicy namespace/name among objs.
func Find(objs []*unstructured.Unstructured, namespace, name string) (*unstructured.Unstructured, error) {
	for _, o := range objs {
		if o.GetKind() == "AuthPolicy" && o.GetNamespace() == namespace && o.GetName() == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("AuthPolicy %s/%s: %w", namespace, name, ErrNoPolicy)
}

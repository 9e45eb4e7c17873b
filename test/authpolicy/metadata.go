package authpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Metadata is one metadata rule: an HTTP call whose answer becomes
// auth.metadata.<name>. Its cache is accepted and not applied: every
// request makes the call (a cache changes when an answer is fetched, not
// what it is).
type Metadata struct {
	HTTP  *HTTPMetadata `json:"http,omitempty"`
	Cache *Cache        `json:"cache,omitempty"`
	Evaluation
}

// HTTPMetadata is a metadata rule's HTTP call, the fields this package
// applies: a literal URL, GET or POST, a JSON body from a CEL expression,
// and a shared secret sent as the Authorization header's credentials.
type HTTPMetadata struct {
	URL             string        `json:"url"`
	Method          string        `json:"method,omitempty"`
	ContentType     string        `json:"contentType,omitempty"`
	Body            *Value        `json:"body,omitempty"`
	SharedSecretRef *SecretKeyRef `json:"sharedSecretRef,omitempty"`
	Credentials     *Credentials  `json:"credentials,omitempty"`
}

// SecretKeyRef is a key of a Secret in Authorino's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Cache is a metadata rule's cache: accepted, not applied.
type Cache struct {
	Key Value `json:"key"`
	TTL int   `json:"ttl,omitempty"`
}

func (m Metadata) check() error {
	if m.Priority != 0 {
		return fmt.Errorf("priority %d: not applied by this test tool", m.Priority)
	}
	h := m.HTTP
	if h == nil {
		return errors.New("only http is applied by this test tool")
	}
	if h.URL == "" {
		return errors.New("http.url: empty (urlExpression is not applied by this test tool)")
	}
	switch h.Method {
	case "", http.MethodGet:
		if h.Body != nil {
			return errors.New("http.body: with GET, Authorino sends no body")
		}
	case http.MethodPost:
		if h.ContentType != "application/json" {
			return fmt.Errorf("http.contentType %q: only application/json is applied by this test tool", h.ContentType)
		}
		if h.Body == nil || h.Body.Expression == "" {
			return errors.New("http.body: only a CEL expression is applied by this test tool")
		}
	default:
		return fmt.Errorf("http.method %q: Authorino sends GET or POST only", h.Method)
	}
	if (h.SharedSecretRef == nil) != (h.Credentials == nil) {
		return errors.New("http: sharedSecretRef and credentials go together here (the secret is sent as the credentials)")
	}
	if h.Credentials != nil && h.Credentials.AuthorizationHeader == nil {
		return errors.New("http.credentials: only authorizationHeader is applied by this test tool")
	}
	if m.Cache != nil && m.Cache.Key.Expression == "" && m.Cache.Key.Value == nil && m.Cache.Key.Selector == "" {
		return errors.New("cache.key: empty")
	}
	return nil
}

// fetchMetadata makes the metadata calls, as Authorino does after
// authentication: each answer goes under its rule's name, parsed as JSON
// when its Content-Type says so (whatever the status code: Authorino does
// not look at it), else as text. A call that fails (the request cannot be
// built or sent, a body that does not parse) is left out, and the policy
// goes on: Authorino's metadata phase never denies by itself.
func (a Authorizer) fetchMetadata(ctx context.Context, rules *Rules, request, identity map[string]any) (map[string]any, error) {
	out := map[string]any{}
	if len(rules.Metadata) == 0 {
		return out, nil
	}
	if a.HTTP == nil {
		return nil, errors.New("metadata: the policy makes HTTP calls and Authorizer.HTTP is nil")
	}
	vars := map[string]any{"request": request, "auth": map[string]any{"identity": identity, "metadata": map[string]any{}}}
	for _, name := range sortedKeys(rules.Metadata) {
		h := rules.Metadata[name].HTTP
		req, err := a.metadataRequest(ctx, h, vars)
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", name, err)
		}
		resp, err := a.HTTP.Do(req)
		if err != nil {
			continue // as Authorino: the metadata is absent
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			continue
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "application/json") {
			out[name] = string(body)
			continue
		}
		var v any
		if json.Unmarshal(body, &v) != nil {
			continue
		}
		out[name] = v
	}
	return out, nil
}

// metadataRequest builds a metadata call. The shared secret is read from
// Authorino's namespace; it missing is an error of the setup, not a
// request the policy refuses.
func (a Authorizer) metadataRequest(ctx context.Context, h *HTTPMetadata, vars map[string]any) (*http.Request, error) {
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if method == http.MethodPost {
		v, err := evalJSON(h.Body.Expression, vars)
		if err != nil {
			return nil, fmt.Errorf("http.body: %w", err)
		}
		body = bytes.NewReader(v)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL, body)
	if err != nil {
		return nil, fmt.Errorf("http.url: %w", err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", h.ContentType)
	} else {
		req.Header.Set("Content-Type", "text/plain")
	}
	if ref := h.SharedSecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.SecretNamespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("http.sharedSecretRef: Secret %s/%s: %w", a.SecretNamespace, ref.Name, err)
		}
		value, ok := secret.Data[ref.Key]
		if !ok {
			return nil, fmt.Errorf("http.sharedSecretRef: Secret %s/%s has no key %s", a.SecretNamespace, ref.Name, ref.Key)
		}
		prefix := h.Credentials.AuthorizationHeader.Prefix
		if prefix == "" {
			prefix = "Bearer"
		}
		req.Header.Set("Authorization", prefix+" "+string(value))
	}
	return req, nil
}

// evalJSON evaluates a CEL expression to JSON.
func evalJSON(expr string, vars map[string]any) ([]byte, error) {
	v, err := evalCEL(expr, vars)
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(v)
}

// evalCEL evaluates a CEL expression to a JSON value.
func evalCEL(expr string, vars map[string]any) (*structpb.Value, error) {
	env, err := cel.NewEnv(cel.Variable("request", cel.DynType), cel.Variable("auth", cel.DynType), ext.Strings())
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compile %q: %w", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("program %q: %w", expr, err)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: %w", expr, err)
	}
	native, err := out.ConvertToNative(structpbValue)
	if err != nil {
		return nil, fmt.Errorf("evaluate %q: not a JSON value: %w", expr, err)
	}
	return native.(*structpb.Value), nil
}

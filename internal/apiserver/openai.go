package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	webhooktoken "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
)

// The paths of the OpenAI-compatible and maas-api-compatible REST
// endpoints that the MaaS gateway routes to the server.
const (
	PathModels = "/v1/models"
	PathTokens = "/v1/tokens"
)

// maxTokenRequestBody bounds the body of POST /v1/tokens.
const maxTokenRequestBody = 64 << 10

// isOpenAIPath says whether path is one of the REST endpoints.
func isOpenAIPath(path string) bool { return path == PathModels || path == PathTokens }

// openAIAttributes are the API requests a REST call stands for: GET
// /v1/models is a cluster-wide list of models, POST /v1/tokens a create of
// a tokenrequest, DELETE /v1/tokens a create of a tokenrevocation. So one
// RBAC rule decides both ways in. Any other call is no resource request.
func openAIAttributes(a authorizer.Attributes) (authorizer.Attributes, bool) {
	if a.IsResourceRequest() {
		return nil, false
	}
	r := authorizer.AttributesRecord{
		User: a.GetUser(), Verb: "create", ResourceRequest: true,
		APIGroup: modelv1alpha1.GroupName, APIVersion: modelv1alpha1.GroupVersion.Version,
	}
	switch {
	case a.GetPath() == PathModels && a.GetVerb() == "get":
		r.Verb, r.Resource = "list", "models"
	case a.GetPath() == PathTokens && a.GetVerb() == "post":
		r.Resource = "tokenrequests"
	case a.GetPath() == PathTokens && a.GetVerb() == "delete":
		r.Resource = "tokenrevocations"
	default:
		return nil, false
	}
	return r, true
}

// openAIAuthorizer authorizes a REST call as the API request it stands for
// (openAIAttributes), and every other request as it is.
type openAIAuthorizer struct{ authorizer.Authorizer }

func (a openAIAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if r, ok := openAIAttributes(attrs); ok {
		return a.Authorizer.Authorize(ctx, r)
	}
	return a.Authorizer.Authorize(ctx, attrs)
}

// openAIAuthenticator authenticates the REST endpoints by the bearer token
// alone, and every other path with the generic server's authenticator.
// A token is checked with a TokenReview for the MaaS audience (a minted
// token, as OpenAI clients send it), then for the cluster API server's own
// audience (the user's own token, as for minting). Request headers
// (X-Remote-User, even on the front proxy's certificate) and client
// certificates do not count there, and there is no anonymous user: no
// token is 401.
type openAIAuthenticator struct {
	generic, bearer authenticator.Request
}

func (a openAIAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if isOpenAIPath(req.URL.Path) {
		return a.bearer.AuthenticateRequest(req)
	}
	return a.generic.AuthenticateRequest(req)
}

// newBearerAuthenticator checks bearer tokens with TokenReviews through
// kube, for the audience and then for the API server's own, with the
// delegated authentication's cache TTL, timeout and retries.
func newBearerAuthenticator(kube kubernetes.Interface, o *Options) (authenticator.Request, error) {
	review, err := webhooktoken.NewFromInterface(kube.AuthenticationV1(), nil, *o.Authentication.WebhookRetryBackoff,
		o.Authentication.TokenRequestTimeout, webhooktoken.AuthenticatorMetrics{
			RecordRequestTotal:   authenticatorfactory.RecordRequestTotal,
			RecordRequestLatency: authenticatorfactory.RecordRequestLatency,
		})
	if err != nil {
		return nil, fmt.Errorf("TokenReview authenticator: %w", err)
	}
	// The cache keys on the token and the audiences asked for.
	cached := tokencache.New(review, false, o.Authentication.CacheTTL, o.Authentication.CacheTTL)
	maas := authenticator.TokenFunc(func(ctx context.Context, token string) (*authenticator.Response, bool, error) {
		return cached.AuthenticateToken(authenticator.WithAudiences(ctx, authenticator.Audiences{o.TokenAudience}), token)
	})
	return group.NewAuthenticatedGroupAdder(bearertoken.New(tokenunion.New(maas, cached))), nil
}

// dropImpersonation removes the impersonation headers from calls of the
// REST endpoints: identity there is the bearer token's, never a header's,
// even for a caller that may impersonate.
func dropImpersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if isOpenAIPath(req.URL.Path) {
			for name := range req.Header {
				if strings.HasPrefix(strings.ToLower(name), "impersonate-") {
					req.Header.Del(name)
				}
			}
		}
		next.ServeHTTP(w, req)
	})
}

// openAI serves the REST endpoints by forwarding to the resources' own
// logic, as the authenticated caller: GET /v1/models is the models list of
// every namespace, in OpenAI's list format; POST /v1/tokens a tokenrequest
// and DELETE /v1/tokens a tokenrevocation, in upstream maas-api's shapes.
type openAI struct {
	models *modelStorage
	minter *minter
}

// openAIModel is a model in OpenAI's list format, with upstream maas-api's
// ready and url.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Ready   bool   `json:"ready"`
	URL     string `json:"url,omitempty"`
}

type openAIList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

// tokenRequest is upstream maas-api's POST /v1/tokens body: expiration is
// a Go duration ("4h") or a number of seconds; absent, 4 h.
type tokenRequest struct {
	Expiration json.RawMessage `json:"expiration,omitempty"`
}

// tokenResponse is upstream maas-api's answer: the token, its lifetime as
// a Go duration and its expiry in Unix seconds.
type tokenResponse struct {
	Token      string `json:"token"`
	Expiration string `json:"expiration"`
	ExpiresAt  int64  `json:"expiresAt"`
}

func (o *openAI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.URL.Path == PathModels && req.Method == http.MethodGet:
		o.listModels(w, req)
	case req.URL.Path == PathTokens && req.Method == http.MethodPost:
		o.requestToken(w, req)
	case req.URL.Path == PathTokens && req.Method == http.MethodDelete:
		o.revokeTokens(w, req)
	case req.URL.Path == PathModels:
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, req.Method+" "+req.URL.Path+": only GET")
	default:
		w.Header().Set("Allow", http.MethodPost+", "+http.MethodDelete)
		writeError(w, http.StatusMethodNotAllowed, req.Method+" "+req.URL.Path+": only POST and DELETE")
	}
}

func (o *openAI) listModels(w http.ResponseWriter, req *http.Request) {
	// No namespace in the context: every namespace.
	obj, err := o.models.List(req.Context(), nil)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	items := obj.(*modelv1alpha1.ModelList).Items
	list := openAIList{Object: "list", Data: make([]openAIModel, len(items))}
	for i := range items {
		m := &items[i]
		list.Data[i] = openAIModel{
			ID: m.Spec.ModelName, Object: "model", Created: m.CreationTimestamp.Unix(), OwnedBy: m.Namespace,
			Ready: m.Status.Ready, URL: m.Status.URL,
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (o *openAI) requestToken(w http.ResponseWriter, req *http.Request) {
	seconds, written, err := readExpiration(http.MaxBytesReader(w, req.Body, maxTokenRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	obj, err := o.minter.request(req.Context(), &modelv1alpha1.TokenRequest{
		Spec: modelv1alpha1.TokenRequestSpec{ExpirationSeconds: seconds},
	}, nil, &metav1.CreateOptions{})
	if apierrors.IsInvalid(err) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("expiration %s: %s", written, invalidCauses(err)))
		return
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	tr := obj.(*modelv1alpha1.TokenRequest)
	writeJSON(w, http.StatusCreated, tokenResponse{
		Token:      tr.Status.Token,
		Expiration: (time.Duration(*tr.Spec.ExpirationSeconds) * time.Second).String(),
		ExpiresAt:  tr.Status.ExpirationTimestamp.Unix(),
	})
}

func (o *openAI) revokeTokens(w http.ResponseWriter, req *http.Request) {
	if _, err := o.minter.revoke(req.Context(), &modelv1alpha1.TokenRevocation{}, nil, &metav1.CreateOptions{}); err != nil {
		writeAPIError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readExpiration reads a POST /v1/tokens body: the lifetime in seconds,
// nil for the default (an empty body, no or an empty expiration), and the
// expiration as the caller wrote it, for messages.
func readExpiration(body io.Reader) (seconds *int64, written string, err error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, "", fmt.Errorf("the request body: %w", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, "(default)", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r tokenRequest
	if err := dec.Decode(&r); err != nil {
		return nil, "", fmt.Errorf("the request body is not {\"expiration\": \"4h\" or seconds}: %w", err)
	}
	written = string(r.Expiration)
	var text string
	switch {
	case len(r.Expiration) == 0 || written == "null" || written == `""`:
		return nil, "(default)", nil
	case json.Unmarshal(r.Expiration, &text) == nil:
		d, err := time.ParseDuration(text)
		if err != nil || d%time.Second != 0 {
			return nil, written, fmt.Errorf("expiration %s: not a duration of whole seconds, e.g. \"4h\" or \"90m\"", written)
		}
		s := int64(d / time.Second)
		return &s, written, nil
	}
	var number float64
	if err := json.Unmarshal(r.Expiration, &number); err != nil || number != math.Trunc(number) || math.Abs(number) > math.MaxInt32 {
		return nil, written, fmt.Errorf("expiration %s: neither a duration (\"4h\") nor a whole number of seconds", written)
	}
	s := int64(number)
	return &s, written, nil
}

// invalidCauses is the message of an Invalid error's causes.
func invalidCauses(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		msgs := make([]string, len(status.Status().Details.Causes))
		for i, c := range status.Status().Details.Causes {
			msgs[i] = c.Message
		}
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}

// writeAPIError answers err as upstream maas-api did, {"error": message},
// with the status code of the API error.
func writeAPIError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		writeError(w, int(status.Status().Code), status.Status().Message)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, map[string]string{"error": message})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

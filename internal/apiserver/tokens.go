package apiserver

import (
	"context"
	"crypto/sha1" //nolint:gosec // only to find the ServiceAccounts of the earlier, ODH-style names
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/kubernetes"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// annotationMaaSUser names the user a ServiceAccount the server makes
// stands for. The ServiceAccount's convention.LabelManagedBy is the
// server's name.
const annotationMaaSUser = "maas.opendatahub.io/username"

// nameHashDigits is how many hex digits of the SHA-256 of the user name end
// a ServiceAccount's name. Many user names sanitize to one DNS label
// ("alice", "Alice!", "alice##"), so the hash alone keeps their
// ServiceAccounts apart. ODH's maas-api used 8 digits of SHA-1: 32 bits,
// which a user who chooses their name can search through for another
// user's in hours. 16 digits (64 bits) put a match for a given user's name
// (2^64 tries) out of reach; two names of the attacker's own that collide
// (2^32 tries) gain nothing, since ensureServiceAccount refuses a
// ServiceAccount that stands for another user.
const nameHashDigits = 16

// maxSanitizedUserLen leaves room in a DNS label for "-" and the hash.
const maxSanitizedUserLen = 63 - 1 - nameHashDigits

var notDNSLabel = regexp.MustCompile(`[^a-z0-9-]+`)

// ServiceAccountName is the ServiceAccount that stands for user in its
// tier's namespace: the user name made a DNS label, then "-" and the first
// nameHashDigits hex digits of the SHA-256 of the user name.
func ServiceAccountName(username string) string {
	sum := sha256.Sum256([]byte(username))
	return sanitizeUser(username, maxSanitizedUserLen) + "-" + hex.EncodeToString(sum[:])[:nameHashDigits]
}

// legacyServiceAccountName is the name ODH's maas-api, and this server
// before nameHashDigits, gave user's ServiceAccount: 8 hex digits of SHA-1.
// A revocation deletes that one too, so tokens minted under it stop.
func legacyServiceAccountName(username string) string {
	sum := sha1.Sum([]byte(username)) //nolint:gosec // see the import
	return sanitizeUser(username, 63-1-8) + "-" + hex.EncodeToString(sum[:])[:8]
}

// sanitizeUser makes username a DNS label of at most maxLen characters.
func sanitizeUser(username string, maxLen int) string {
	s := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(username), "-"), "-")
	if len(s) > maxLen {
		s = strings.TrimRight(s[:maxLen], "-")
	}
	if s == "" {
		s = "user"
	}
	return s
}

// minter mints and revokes the tokens of the caller's ServiceAccount.
type minter struct {
	kube     kubernetes.Interface
	tiers    *tierSource
	audience string
	max      time.Duration
	// name is ServiceAccountName; a test makes two users' names collide.
	name func(username string) string
}

func newMinter(kube kubernetes.Interface, tiers *tierSource, o *Options) *minter {
	return &minter{kube: kube, tiers: tiers, audience: o.TokenAudience, max: o.TokenMaxExpiration, name: ServiceAccountName}
}

// caller resolves the request's user to its tier and ServiceAccount. A
// minted ServiceAccount is refused: a MaaS token must not mint or revoke
// tokens (upstream's unmerged PR #343).
func (m *minter) caller(ctx context.Context, resource string) (user.Info, tier.Tier, modelv1alpha1.ServiceAccountReference, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, tier.Tier{}, modelv1alpha1.ServiceAccountReference{}, apierrors.NewUnauthorized("no user in the request")
	}
	if m.tiers.isMinted(u) {
		return nil, tier.Tier{}, modelv1alpha1.ServiceAccountReference{}, apierrors.NewForbidden(groupResource(resource), "",
			fmt.Errorf("%s is a ServiceAccount of a MaaS tier namespace: a MaaS token cannot request or revoke tokens; authenticate as yourself", u.GetName()))
	}
	t, err := m.tiers.userTier(u, resource)
	if err != nil {
		return nil, tier.Tier{}, modelv1alpha1.ServiceAccountReference{}, err
	}
	ref := modelv1alpha1.ServiceAccountReference{Namespace: m.tiers.namespace(t.Name), Name: m.name(u.GetName())}
	return u, t, ref, nil
}

// ensureServiceAccount creates the caller's ServiceAccount unless it
// exists, and refuses (409) one that stands for another user: two user
// names that map to one ServiceAccount name must not share its tokens.
func (m *minter) ensureServiceAccount(ctx context.Context, u user.Info, ref modelv1alpha1.ServiceAccountReference) error {
	sas := m.kube.CoreV1().ServiceAccounts(ref.Namespace)
	live, err := sas.Get(ctx, ref.Name, metav1.GetOptions{})
	if err == nil {
		return standsFor(live, u)
	}
	if !apierrors.IsNotFound(err) {
		return apiError(fmt.Sprintf("get ServiceAccount %s/%s", ref.Namespace, ref.Name), err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: ref.Name, Namespace: ref.Namespace,
		Labels:      map[string]string{convention.LabelManagedBy: serverName},
		Annotations: map[string]string{annotationMaaSUser: u.GetName()},
	}}
	_, err = sas.Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsAlreadyExists(err):
		// Made since the Get: by this user's other request, or another's.
		live, err := sas.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return apiError(fmt.Sprintf("get ServiceAccount %s/%s", ref.Namespace, ref.Name), err)
		}
		return standsFor(live, u)
	case apierrors.IsNotFound(err):
		return apierrors.NewServiceUnavailable(fmt.Sprintf("the namespace %s of the tier does not exist: the chart creates one per tier (maas.tiers)", ref.Namespace))
	}
	return apiError(fmt.Sprintf("create ServiceAccount %s/%s", ref.Namespace, ref.Name), err)
}

// standsFor answers 409 unless sa is the one this server made for u.
func standsFor(sa *corev1.ServiceAccount, u user.Info) error {
	if sa.Annotations[annotationMaaSUser] == u.GetName() && sa.Labels[convention.LabelManagedBy] == serverName {
		return nil
	}
	return apierrors.NewConflict(corev1.Resource("serviceaccounts"), sa.Namespace+"/"+sa.Name,
		fmt.Errorf("the ServiceAccount for user %q exists and does not stand for that user (annotation %s %q, label %s %q); "+
			"an administrator must remove or rename it", u.GetName(), annotationMaaSUser, sa.Annotations[annotationMaaSUser],
			convention.LabelManagedBy, sa.Labels[convention.LabelManagedBy]))
}

// deleteServiceAccount deletes the ServiceAccount name in namespace if it
// stands for u, with a precondition on the UID read: one made again in
// between, for someone else, is not deleted. A missing one is no error;
// one for another user is refused when refuse, else left alone.
func (m *minter) deleteServiceAccount(ctx context.Context, u user.Info, namespace, name string, refuse bool) error {
	sas := m.kube.CoreV1().ServiceAccounts(namespace)
	live, err := sas.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return apiError(fmt.Sprintf("get ServiceAccount %s/%s", namespace, name), err)
	}
	if err := standsFor(live, u); err != nil {
		if refuse {
			return err
		}
		return nil
	}
	err = sas.Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(live.UID))})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return apierrors.NewConflict(corev1.Resource("serviceaccounts"), namespace+"/"+name,
			fmt.Errorf("the ServiceAccount was replaced while being revoked; try again: %w", err))
	}
	return apiError(fmt.Sprintf("delete ServiceAccount %s/%s", namespace, name), err)
}

// admit runs the create validation of the handler chain and refuses a
// dry run: a token request or revocation has effects it cannot skip.
func admit(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions, resource string) error {
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return err
		}
	}
	if opts != nil && len(opts.DryRun) > 0 {
		return apierrors.NewBadRequest(resource + ": dry run is not supported")
	}
	return nil
}

// apiError reports a failed call to the cluster as a 500 that says what
// was being done.
func apiError(what string, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("%s: %w", what, err))
}

// expiration checks spec.expirationSeconds against the bounds.
func (m *minter) expiration(req *modelv1alpha1.TokenRequest) (int64, error) {
	seconds := int64(DefaultTokenExpiration / time.Second)
	if req.Spec.ExpirationSeconds != nil {
		seconds = *req.Spec.ExpirationSeconds
	}
	minimum, maximum := int64(MinTokenExpiration/time.Second), int64(m.max/time.Second)
	if seconds < minimum || seconds > maximum {
		return 0, apierrors.NewInvalid(groupKind("TokenRequest"), req.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "expirationSeconds"), seconds, fmt.Sprintf("must be between %d (%s) and %d (%s)", minimum, MinTokenExpiration, maximum, m.max)),
		})
	}
	return seconds, nil
}

// request answers a tokenrequest: a token of the caller's ServiceAccount,
// with the MaaS audience. The ServiceAccount is made on first use.
func (m *minter) request(ctx context.Context, req *modelv1alpha1.TokenRequest, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	u, t, ref, err := m.caller(ctx, "tokenrequests")
	if err != nil {
		return nil, err
	}
	seconds, err := m.expiration(req)
	if err != nil {
		return nil, err
	}
	if err := admit(ctx, req, validate, opts, "tokenrequests"); err != nil {
		return nil, err
	}
	if err := m.ensureServiceAccount(ctx, u, ref); err != nil {
		return nil, err
	}
	tr, err := m.kube.CoreV1().ServiceAccounts(ref.Namespace).CreateToken(ctx, ref.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{m.audience}, ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, apiError(fmt.Sprintf("request a token of ServiceAccount %s/%s", ref.Namespace, ref.Name), err)
	}
	req.Spec.ExpirationSeconds = &seconds
	req.Status = modelv1alpha1.TokenRequestStatus{
		Token: tr.Status.Token, ExpirationTimestamp: tr.Status.ExpirationTimestamp, Tier: t.Name, ServiceAccount: ref,
	}
	return req, nil
}

// revoke answers a tokenrevocation: the caller's ServiceAccount is deleted
// and made again, so none of its tokens authenticates any more.
func (m *minter) revoke(ctx context.Context, rev *modelv1alpha1.TokenRevocation, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	u, t, ref, err := m.caller(ctx, "tokenrevocations")
	if err != nil {
		return nil, err
	}
	if err := admit(ctx, rev, validate, opts, "tokenrevocations"); err != nil {
		return nil, err
	}
	if err := m.deleteServiceAccount(ctx, u, ref.Namespace, ref.Name, true); err != nil {
		return nil, err
	}
	// Tokens minted under the earlier name stop too.
	if legacy := legacyServiceAccountName(u.GetName()); legacy != ref.Name {
		if err := m.deleteServiceAccount(ctx, u, ref.Namespace, legacy, false); err != nil {
			return nil, err
		}
	}
	if err := m.ensureServiceAccount(ctx, u, ref); err != nil {
		return nil, err
	}
	rev.Status = modelv1alpha1.TokenRevocationStatus{Tier: t.Name, ServiceAccount: ref}
	return rev, nil
}

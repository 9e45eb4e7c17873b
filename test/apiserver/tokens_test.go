package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// requestToken creates a TokenRequest as u.
func (u *user) requestToken(t *testing.T, seconds *int64) (*modelv1alpha1.TokenRequest, error) {
	t.Helper()
	r := &modelv1alpha1.TokenRequest{Spec: modelv1alpha1.TokenRequestSpec{ExpirationSeconds: seconds}}
	r.GenerateName = "token-"
	err := u.c.Create(t.Context(), r)
	return r, err
}

// tokenReview asks the kube-apiserver who token is, for audiences.
func tokenReview(t *testing.T, token string, audiences ...string) authenticationv1.TokenReviewStatus {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	r, err := kube.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: audiences},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// TestTokenRequest: the minted token authenticates as the tier's
// ServiceAccount for the MaaS audience only, with the default lifetime.
func TestTokenRequest(t *testing.T) {
	for _, tc := range []struct {
		u    *user
		tier string
	}{
		{newUser(t, premiumUser, "premium-users"), "premium"},
		{newUser(t, freeUser), "free"},
	} {
		before := time.Now()
		r, err := tc.u.requestToken(t, nil)
		if err != nil {
			t.Fatalf("%s requests a token: %v", tc.u.name, err)
		}
		sa := modelv1alpha1.ServiceAccountReference{Namespace: tierPrefix + tc.tier, Name: apiserver.ServiceAccountName(tc.u.name)}
		if r.Status.Tier != tc.tier || r.Status.ServiceAccount != sa || r.Status.Token == "" {
			t.Errorf("%s's token: tier %q, ServiceAccount %+v, want %q and %+v", tc.u.name, r.Status.Tier, r.Status.ServiceAccount, tc.tier, sa)
		}
		if exp := r.Status.ExpirationTimestamp.Sub(before); exp < apiserver.DefaultTokenExpiration-time.Minute || exp > apiserver.DefaultTokenExpiration+time.Minute {
			t.Errorf("%s's token expires in %s, want %s", tc.u.name, exp, apiserver.DefaultTokenExpiration)
		}
		st := tokenReview(t, r.Status.Token, audience)
		if want := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name; !st.Authenticated || st.User.Username != want || !slices.Contains(st.Audiences, audience) {
			t.Errorf("TokenReview of %s's token: %+v, want %s with audience %s", tc.u.name, st, want, audience)
		}
		if st := tokenReview(t, r.Status.Token); st.Authenticated {
			t.Errorf("%s's MaaS token authenticates for the API server's own audience: %+v", tc.u.name, st)
		}
	}
}

// TestTokenExpiryBounds: at least 10 minutes, at most --token-max-expiration.
func TestTokenExpiryBounds(t *testing.T) {
	alice := newUser(t, premiumUser, "premium-users")
	for _, seconds := range []int64{599, int64(maxExpiration/time.Second) + 1} {
		_, err := alice.requestToken(t, ptr.To(seconds))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.expirationSeconds") {
			t.Errorf("expirationSeconds %d: %v, want 422 naming spec.expirationSeconds", seconds, err)
		}
	}
	for _, seconds := range []int64{600, int64(maxExpiration / time.Second)} {
		before := time.Now()
		r, err := alice.requestToken(t, ptr.To(seconds))
		if err != nil {
			t.Fatalf("expirationSeconds %d: %v", seconds, err)
		}
		if got := r.Status.ExpirationTimestamp.Sub(before); got < time.Duration(seconds-60)*time.Second || got > time.Duration(seconds+60)*time.Second {
			t.Errorf("expirationSeconds %d: the token expires in %s", seconds, got)
		}
	}
}

// TestMintedTokenCannotMint: a MaaS token is refused by the kube-apiserver
// (its audience is the gateway's), and the same ServiceAccount with a
// token the kube-apiserver accepts is refused by the api-server: a MaaS
// identity cannot mint or revoke (upstream PR #343).
func TestMintedTokenCannotMint(t *testing.T) {
	alice := newUser(t, premiumUser, "premium-users")
	r, err := alice.requestToken(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	maas := newBearerUser(t, "maas-token", r.Status.Token)
	if _, err := maas.requestToken(t, nil); !apierrors.IsUnauthorized(err) {
		t.Errorf("a MaaS token requests a token: %v, want 401 from the kube-apiserver", err)
	}

	kube := kubernetes.NewForConfigOrDie(cp.Config)
	sa := r.Status.ServiceAccount
	apiToken, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(t.Context(), sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	minted := newBearerUser(t, "minted-service-account", apiToken.Status.Token)
	if _, err := minted.requestToken(t, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a MaaS token cannot request or revoke tokens") {
		t.Errorf("the minted ServiceAccount requests a token: %v, want the api-server's 403", err)
	}
	rev := &modelv1alpha1.TokenRevocation{}
	rev.GenerateName = "revoke-"
	if err := minted.c.Create(t.Context(), rev); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a MaaS token cannot request or revoke tokens") {
		t.Errorf("the minted ServiceAccount revokes: %v, want the api-server's 403", err)
	}
}

// TestTokenRevocation: after a revocation the earlier token fails
// TokenReview, and a new one works.
func TestTokenRevocation(t *testing.T) {
	erin := newUser(t, enterpriseUser, "enterprise-users")
	old, err := erin.requestToken(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The kube-apiserver caches a token's authentication for 10 s, by
	// token and audiences: checked before with another audience list, the
	// check after is no cache hit.
	if st := tokenReview(t, old.Status.Token, audience, "another-audience"); !st.Authenticated {
		t.Fatalf("the token before revocation: %+v", st)
	}
	rev := &modelv1alpha1.TokenRevocation{}
	rev.GenerateName = "revoke-"
	if err := erin.c.Create(t.Context(), rev); err != nil {
		t.Fatal(err)
	}
	if rev.Status.Tier != "enterprise" || rev.Status.ServiceAccount != old.Status.ServiceAccount {
		t.Errorf("revocation status %+v, want tier enterprise and %+v", rev.Status, old.Status.ServiceAccount)
	}
	testenv.Eventually(t, "the revoked token fails TokenReview", func() error {
		if st := tokenReview(t, old.Status.Token, audience); st.Authenticated {
			return fmt.Errorf("still authenticated as %s", st.User.Username)
		}
		return nil
	})
	fresh, err := erin.requestToken(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := tokenReview(t, fresh.Status.Token, audience); !st.Authenticated {
		t.Errorf("a token after revocation: %+v", st)
	}
}

// newBearerUser reaches the kube-apiserver with token only.
func newBearerUser(t *testing.T, name, token string) *user {
	t.Helper()
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = token
	return &user{name: name, c: newClient(t, cfg), cfg: cfg, warnings: &warnings{}}
}

// TestServiceAccountOfAnotherUser: carol's ServiceAccount name is taken by
// one the server made for another user whose name sanitized and hashed
// alike (made here as the server would have; internal/apiserver's
// TestCollidingUsersDoNotShareServiceAccount forces the collision itself).
// Carol's token request and revocation are refused with 409, and the other
// user's ServiceAccount and token survive.
func TestServiceAccountOfAnotherUser(t *testing.T) {
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cp.Config)
	sas := kube.CoreV1().ServiceAccounts(tierPrefix + "free")
	theirs, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name:        apiserver.ServiceAccountName(collidingUser),
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "odh-serving-api-server"},
		Annotations: map[string]string{"maas.opendatahub.io/username": "Carol!"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sas.Delete(context.Background(), theirs.Name, metav1.DeleteOptions{}) })
	token, err := sas.CreateToken(ctx, theirs.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	carol := newUser(t, collidingUser)
	if _, err := carol.requestToken(t, nil); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Carol!") {
		t.Errorf("carol requests a token of Carol!'s ServiceAccount: %v, want 409 naming its user", err)
	}
	rev := &modelv1alpha1.TokenRevocation{}
	rev.GenerateName = "revoke-"
	if err := carol.c.Create(ctx, rev); !apierrors.IsConflict(err) {
		t.Errorf("carol revokes Carol!'s ServiceAccount: %v, want 409", err)
	}
	live, err := sas.Get(ctx, theirs.Name, metav1.GetOptions{})
	if err != nil || live.UID != theirs.UID {
		t.Fatalf("Carol!'s ServiceAccount after carol's calls: %v, UID %s; want it as it was (%s)", err, live.GetUID(), theirs.UID)
	}
	// Checked with an audience list not used before, so the API server's
	// token cache does not answer.
	if st := tokenReview(t, token.Status.Token, audience, "after-carol"); !st.Authenticated {
		t.Errorf("Carol!'s token after carol's calls: %+v, want it to authenticate", st)
	}
}

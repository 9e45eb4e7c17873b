package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// collidingMinter is a minter over a fake cluster whose ServiceAccount
// names all collide (the test seam), with one tier "free" that every
// authenticated user is in. The fake gives each ServiceAccount a UID and
// mints tokens that name it.
func collidingMinter(t *testing.T) (*minter, *fake.Clientset) {
	t.Helper()
	kube := fake.NewClientset()
	uids := 0
	kube.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateAction)
		switch a.GetSubresource() {
		case "":
			uids++
			create.GetObject().(*corev1.ServiceAccount).UID = types.UID(fmt.Sprintf("uid-%d", uids))
			return false, nil, nil // the tracker stores it
		case "token":
			sa, err := kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), a.GetNamespace(), create.(k8stesting.CreateActionImpl).Name)
			if err != nil {
				return true, nil, err
			}
			return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "token-of-" + string(sa.(*corev1.ServiceAccount).UID)}}, nil
		}
		return false, nil, nil
	})
	cfg, err := tier.Parse("- name: free\n  level: 0\n  groups: [system:authenticated]\n", "")
	if err != nil {
		t.Fatal(err)
	}
	tiers := &tierSource{prefix: tier.DefaultNamespacePrefix}
	tiers.current.Store(&tierConfig{cfg: cfg})
	m := newMinter(kube, tiers, NewOptions())
	m.name = func(string) string { return "alice-collides" }
	return m, kube
}

func as(name string) context.Context {
	return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}})
}

// TestCollidingUsersDoNotShareServiceAccount: "alice" and "Alice!"
// sanitize alike and, through the seam, hash alike. Alice's request makes
// the ServiceAccount; Alice!'s request and revocation are refused with
// 409, and Alice's ServiceAccount (and so her tokens) stays, never deleted.
// Alice's own revocation deletes it with a precondition on its UID.
func TestCollidingUsersDoNotShareServiceAccount(t *testing.T) {
	m, kube := collidingMinter(t)
	first, err := m.request(as("alice"), &modelv1alpha1.TokenRequest{}, nil, nil)
	if err != nil {
		t.Fatalf("alice requests a token: %v", err)
	}
	if tok := first.(*modelv1alpha1.TokenRequest).Status.Token; tok != "token-of-uid-1" {
		t.Fatalf("alice's token %q, want one of her new ServiceAccount", tok)
	}
	ns := tier.DefaultNamespacePrefix + "free"
	before := len(kube.Actions())

	_, err = m.request(as("Alice!"), &modelv1alpha1.TokenRequest{}, nil, nil)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"Alice!"`) || !strings.Contains(err.Error(), ns+"/alice-collides") {
		t.Errorf("Alice! requests a token of alice's ServiceAccount: %v, want 409 naming the user and the ServiceAccount", err)
	}
	_, err = m.revoke(as("Alice!"), &modelv1alpha1.TokenRevocation{}, nil, nil)
	if !apierrors.IsConflict(err) {
		t.Errorf("Alice! revokes alice's ServiceAccount: %v, want 409", err)
	}
	for _, a := range kube.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("Alice!'s calls wrote to the cluster: %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
	sa, err := kube.CoreV1().ServiceAccounts(ns).Get(context.Background(), "alice-collides", metav1.GetOptions{})
	if err != nil || sa.UID != "uid-1" || sa.Annotations[annotationMaaSUser] != "alice" {
		t.Fatalf("alice's ServiceAccount after Alice!'s calls: %v %v, want uid-1 standing for alice", sa, err)
	}

	// Alice revokes: her ServiceAccount goes, on the condition that it is
	// still the one read, and comes back new.
	before = len(kube.Actions())
	if _, err := m.revoke(as("alice"), &modelv1alpha1.TokenRevocation{}, nil, nil); err != nil {
		t.Fatalf("alice revokes: %v", err)
	}
	var deletes int
	for _, a := range kube.Actions()[before:] {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetName() == "alice-collides" {
			deletes++
			if p := d.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != "uid-1" {
				t.Errorf("alice's revocation deletes without the UID precondition: %+v", p)
			}
		}
	}
	if deletes != 1 {
		t.Errorf("alice's revocation deleted her ServiceAccount %d times, want once", deletes)
	}
	if sa, err := kube.CoreV1().ServiceAccounts(ns).Get(context.Background(), "alice-collides", metav1.GetOptions{}); err != nil || sa.UID == "uid-1" {
		t.Errorf("alice's ServiceAccount after her revocation: %v %v, want a new one", sa, err)
	}
}

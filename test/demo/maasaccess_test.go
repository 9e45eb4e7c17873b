package main

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// TestCheckGrant: the MaaS step names the RoleBinding that allowed its
// SubjectAccessReview only after finding it, bound to the token's group,
// to a Role that allows post on the service, labelled and owned as the
// controller makes it. Each planted fault in the RBAC fails with a message
// naming it.
func TestCheckGrant(t *testing.T) {
	svc := serviceRef{Namespace: "demo", Name: "qwen"}
	const (
		user  = "system:serviceaccount:maas-default-gateway-tier-premium:alice-1"
		group = "system:serviceaccounts:maas-default-gateway-tier-premium"
		want  = "qwen-model-user-premium"
	)
	groups := []string{group, "system:serviceaccounts", "system:authenticated"}
	controllerTrue := true
	role := func() *rbacv1.Role {
		return &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "qwen-model-user"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"serving.kserve.io"}, Resources: []string{"llminferenceservices"},
				ResourceNames: []string{"qwen"}, Verbs: []string{build.VerbPost}}},
		}
	}
	binding := func() *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: want,
				Labels:          map[string]string{convention.LabelComponent: build.ComponentModelAccess},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.kserve.io/v1alpha2", Kind: "LLMInferenceService", Name: "qwen", UID: "u", Controller: &controllerTrue}},
			},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "qwen-model-user"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
	}
	cases := []struct {
		name    string
		allowed bool
		plant   func(*rbacv1.Role, *rbacv1.RoleBinding)
		wantErr string
	}{
		{"the controller's binding", true, nil, ""},
		{"the binding names another tier's group", true, func(_ *rbacv1.Role, rb *rbacv1.RoleBinding) {
			rb.Subjects[0].Name = "system:serviceaccounts:maas-default-gateway-tier-free"
		},
			"no RoleBinding demo/qwen-model-user-premium grants it"},
		{"the Role allows get, not post", true, func(r *rbacv1.Role, _ *rbacv1.RoleBinding) { r.Rules[0].Verbs = []string{"get"} },
			"no RoleBinding demo/qwen-model-user-premium grants it"},
		{"the Role names another service", true, func(r *rbacv1.Role, _ *rbacv1.RoleBinding) { r.Rules[0].ResourceNames = []string{"llama-pd"} },
			"no RoleBinding demo/qwen-model-user-premium grants it"},
		{"a binding not labelled as the controller's", true, func(_ *rbacv1.Role, rb *rbacv1.RoleBinding) { rb.Labels = nil },
			"is not the controller's model access"},
		{"a binding the service does not own", true, func(_ *rbacv1.Role, rb *rbacv1.RoleBinding) { rb.OwnerReferences = nil },
			"is not owned by LLMInferenceService demo/qwen"},
		{"denied while a binding grants it", false, nil, "denied post on demo/qwen, yet RoleBindings qwen-model-user-premium grant it"},
		{"denied with no binding", false, func(_ *rbacv1.Role, rb *rbacv1.RoleBinding) { rb.Subjects = nil }, ""},
	}
	scheme := runtime.NewScheme()
	if err := rbacv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, rb := role(), binding()
			if c.plant != nil {
				c.plant(r, rb)
			}
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects([]client.Object{r, rb}...).Build()
			bindings, err := grantingBindings(t.Context(), cl, svc, user, groups)
			if err != nil {
				t.Fatal(err)
			}
			got, err := checkGrant(svc, c.allowed, bindings, want)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.allowed && got != want {
					t.Errorf("granted by %q, want %q", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("error %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

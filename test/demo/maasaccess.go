package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// grantingBindings returns the RoleBindings in svc's namespace that give
// user or one of groups the verb post on the LLMInferenceService svc: what
// a SubjectAccessReview of that call is allowed by in the namespace. A
// binding whose Role cannot be read counts as granting nothing.
func grantingBindings(ctx context.Context, c client.Client, svc serviceRef, user string, groups []string) ([]rbacv1.RoleBinding, error) {
	list := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, list, client.InNamespace(svc.Namespace)); err != nil {
		return nil, fmt.Errorf("list RoleBindings in %s: %w", svc.Namespace, err)
	}
	var out []rbacv1.RoleBinding
	for _, rb := range list.Items {
		if !bindsSubject(rb.Subjects, user, groups) {
			continue
		}
		rules, err := roleRules(ctx, c, svc.Namespace, rb.RoleRef)
		if err != nil {
			return nil, fmt.Errorf("RoleBinding %s/%s: %w", rb.Namespace, rb.Name, err)
		}
		if allowsPost(rules, svc.Name) {
			out = append(out, rb)
		}
	}
	return out, nil
}

// bindsSubject reports whether subjects name user (a User, or the
// ServiceAccount a system:serviceaccount: name stands for) or one of
// groups.
func bindsSubject(subjects []rbacv1.Subject, user string, groups []string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(groups, s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			if user == "system:serviceaccount:"+s.Namespace+":"+s.Name {
				return true
			}
		}
	}
	return false
}

// roleRules reads the rules of the Role or ClusterRole ref names; nil when
// it does not exist (RBAC then grants nothing).
func roleRules(ctx context.Context, c client.Client, namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role := &rbacv1.Role{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, role)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return role.Rules, err
	case "ClusterRole":
		role := &rbacv1.ClusterRole{}
		err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, role)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return role.Rules, err
	}
	return nil, fmt.Errorf("roleRef kind %q is neither Role nor ClusterRole", ref.Kind)
}

// allowsPost reports whether rules allow post on the llminferenceservice
// name, as RBAC reads them (wildcards included).
func allowsPost(rules []rbacv1.PolicyRule, name string) bool {
	has := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, rbacv1.ResourceAll)
	}
	for _, r := range rules {
		if has(r.Verbs, build.VerbPost) && has(r.APIGroups, v1alpha2.GroupVersion.Group) && has(r.Resources, "llminferenceservices") &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
			return true
		}
	}
	return false
}

// checkGrant checks the demo's own SubjectAccessReview against the
// bindings that allow it: allowed must come with the controller's
// RoleBinding want (<service>-model-user-<tier>, labelled as model access
// and owned by the service) among them, denied with none. It returns the
// binding that allowed the call, "" when denied.
func checkGrant(svc serviceRef, allowed bool, bindings []rbacv1.RoleBinding, want string) (string, error) {
	names := make([]string, 0, len(bindings))
	for _, rb := range bindings {
		names = append(names, rb.Name)
	}
	if !allowed {
		if len(bindings) > 0 {
			return "", fmt.Errorf("the SubjectAccessReview denied post on %s, yet RoleBindings %s grant it", svc, strings.Join(names, ", "))
		}
		return "", nil
	}
	i := slices.IndexFunc(bindings, func(rb rbacv1.RoleBinding) bool { return rb.Name == want })
	if i < 0 {
		return "", fmt.Errorf("the SubjectAccessReview allowed post on %s, but no RoleBinding %s/%s grants it (granted by: %v)", svc, svc.Namespace, want, names)
	}
	rb := bindings[i]
	if rb.Labels[convention.LabelComponent] != build.ComponentModelAccess {
		return "", fmt.Errorf("RoleBinding %s/%s is not the controller's model access: label %s=%q, want %q",
			rb.Namespace, rb.Name, convention.LabelComponent, rb.Labels[convention.LabelComponent], build.ComponentModelAccess)
	}
	for _, o := range rb.OwnerReferences {
		if o.Kind == "LLMInferenceService" && o.Name == svc.Name && o.Controller != nil && *o.Controller {
			return rb.Name, nil
		}
	}
	return "", fmt.Errorf("RoleBinding %s/%s is not owned by LLMInferenceService %s", rb.Namespace, rb.Name, svc)
}

package build

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/tier"
)

// ComponentModelAccess labels the RBAC that lets MaaS tiers call a
// service: its model-user Role and one RoleBinding per tier.
const ComponentModelAccess = "llminferenceservice-model-access"

// VerbPost is the verb the gateway's SubjectAccessReview asks about for an
// inference call to a service (resource llminferenceservices, the
// service's name): ODH's MaaS convention.
const VerbPost = "post"

// Access is what ModelAccess made of a service's MaaS tiers.
type Access struct {
	// Published is true when the service carries the tiers annotation.
	Published bool
	// Tiers are the tiers bound, in the tier list's order.
	Tiers []string
	// Unknown are the names of the annotation that the tier list lacks:
	// they got no RoleBinding.
	Unknown []string
	// Err says what is wrong with the annotation (tier.Grant): it is not
	// a JSON list of names (nothing was built), or it names Unknown tiers
	// (the others were bound).
	Err error
}

// ModelAccessRole is the name of a service's model-user Role.
func ModelAccessRole(svc *v1alpha2.LLMInferenceService) string { return svc.Name + "-model-user" }

// ModelAccessBinding is the name of the RoleBinding of one tier to it. A
// service name is at most 63 characters and a tier's at most 62, so the
// name always fits the 253 an RBAC name may have.
func ModelAccessBinding(svc *v1alpha2.LLMInferenceService, tierName string) string {
	return ModelAccessRole(svc) + "-" + tierName
}

// ModelAccess builds, for a service published to MaaS, the Role
// <service>-model-user that allows the verb post on this one
// llminferenceservice, and a RoleBinding of it to the ServiceAccount group
// of each tier's namespace, whose members are the tokens minted for the
// tier. The gateway authorizes an inference call with a
// SubjectAccessReview of exactly that. The tiers are those the annotation
// grants (tier.Config.Grant, which the MaaS API server's models follow
// too); a service that grants no tier, unpublished or with a bad
// annotation, gets neither Role nor RoleBinding.
func ModelAccess(svc *v1alpha2.LLMInferenceService, tiers *tier.Config) ([]Object, Access) {
	grant := tiers.Grant(tier.ReadAnnotation(svc.Annotations))
	if !grant.Published {
		return nil, Access{}
	}
	access := Access{Published: true, Tiers: grant.Names(), Unknown: grant.Unknown, Err: grant.Err}
	if len(grant.Tiers) == 0 {
		return nil, access
	}
	b := &builder{svc: svc}
	role := ModelAccessRole(svc)
	out := []Object{&rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: b.meta(role, ComponentModelAccess),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"llminferenceservices"},
			ResourceNames: []string{svc.Name}, Verbs: []string{VerbPost},
		}},
	}}
	for _, t := range grant.Tiers {
		out = append(out, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: b.meta(ModelAccessBinding(svc, t.Name), ComponentModelAccess),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: tiers.ServiceAccountGroup(t.Name)}},
		})
	}
	return out, access
}

// String says which tiers a service is bound to, for a condition message.
func (a Access) String() string {
	if len(a.Tiers) == 0 {
		return "no tier may call it"
	}
	return fmt.Sprintf("tiers %v may call it", a.Tiers)
}

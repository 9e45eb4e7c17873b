package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Model is an LLMInferenceService published to MaaS that the caller's tier
// may use. Its name and namespace are the service's.
//
// +kubebuilder:object:root=true
type Model struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the service's name, namespace, uid and creation time.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModelSpec   `json:"spec"`
	Status ModelStatus `json:"status"`
}

// ModelSpec is what the service's owner published.
type ModelSpec struct {
	// modelName is the name clients send in requests: the service's
	// spec.model.name, else its metadata.name.
	ModelName string `json:"modelName"`
	// tiers are the tiers the service is published to, from its
	// alpha.maas.opendatahub.io/tiers annotation. Empty means every tier.
	// +listType=atomic
	Tiers []string `json:"tiers"`
}

// ModelStatus is the service's observed state.
type ModelStatus struct {
	// ready is true when the service's Ready condition is True.
	Ready bool `json:"ready"`
	// url is the service's first external URL.
	// +optional
	URL string `json:"url,omitempty"`
	// addresses are every URL the service is reachable at.
	// +optional
	// +listType=atomic
	Addresses []ModelAddress `json:"addresses,omitempty"`
}

// ModelAddress is one URL of a service.
type ModelAddress struct {
	// name says which address this is, such as gateway-external.
	// +optional
	Name string `json:"name,omitempty"`
	// url is the address.
	URL string `json:"url"`
}

// ModelList is a list of Model.
//
// +kubebuilder:object:root=true
type ModelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Model `json:"items"`
}

// TierReview asks which MaaS tier a user belongs to. It is cluster-scoped
// and create-only, like TokenReview: the response carries the status. The
// gateway's policy engine creates them to learn a token's tier.
//
// +kubebuilder:object:root=true
type TierReview struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TierReviewSpec `json:"spec"`
	// +optional
	Status TierReviewStatus `json:"status,omitzero"`
}

// TierReviewSpec is the user whose tier is asked for.
type TierReviewSpec struct {
	// user is the user's name; informational, tiers match by group.
	// +optional
	User string `json:"user,omitempty"`
	// groups are the user's groups, as a TokenReview returns them.
	// +optional
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
}

// TierReviewStatus is the answer: the tier, or why there is none.
type TierReviewStatus struct {
	// tier is the name of the tier with the highest level among those
	// that list one of the groups; on a tie, the first listed.
	// +optional
	Tier string `json:"tier,omitempty"`
	// displayName is the tier's display name.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// level is the tier's level.
	// +optional
	Level int64 `json:"level,omitempty"`
	// error says why no tier matched.
	// +optional
	Error string `json:"error,omitempty"`
}

// TokenRequest mints a token for the caller: a token of the ServiceAccount
// that stands for the caller in the namespace of the caller's tier, with
// the MaaS audience. Create-only; the response carries the token.
//
// +kubebuilder:object:root=true
type TokenRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TokenRequestSpec `json:"spec,omitzero"`
	// +optional
	Status TokenRequestStatus `json:"status,omitzero"`
}

// TokenRequestSpec is what the caller asks for.
type TokenRequestSpec struct {
	// expirationSeconds is how long the token is valid: at least 600
	// (10 minutes), at most the server's --token-max-expiration; default
	// 14400 (4 hours).
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// TokenRequestStatus is the minted token.
type TokenRequestStatus struct {
	// token is the bearer token.
	Token string `json:"token"`
	// expirationTimestamp is when the token stops being valid.
	ExpirationTimestamp metav1.Time `json:"expirationTimestamp"`
	// tier is the caller's tier.
	Tier string `json:"tier"`
	// serviceAccount is the ServiceAccount the token belongs to.
	ServiceAccount ServiceAccountReference `json:"serviceAccount"`
}

// ServiceAccountReference names a ServiceAccount.
type ServiceAccountReference struct {
	// namespace is the tier's namespace.
	Namespace string `json:"namespace"`
	// name is the ServiceAccount's name.
	Name string `json:"name"`
}

// TokenRevocation revokes every token minted for the caller: the caller's
// ServiceAccount in its tier's namespace is deleted and made again.
// Create-only.
//
// +kubebuilder:object:root=true
type TokenRevocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status TokenRevocationStatus `json:"status,omitzero"`
}

// TokenRevocationStatus says what was revoked.
type TokenRevocationStatus struct {
	// tier is the caller's tier.
	Tier string `json:"tier"`
	// serviceAccount is the ServiceAccount made again; tokens of the
	// previous one no longer authenticate.
	ServiceAccount ServiceAccountReference `json:"serviceAccount"`
}

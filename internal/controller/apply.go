package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Annotations the controller puts on children.
const (
	// AnnotationAppliedHash is the hash of the child as last applied. A
	// child whose hash matches, and whose live fields still hold every
	// field the controller sets, is not applied again.
	AnnotationAppliedHash = "odh-serving.opendatahub.io/applied-hash"
	// AnnotationOwner and AnnotationOwnerUID name the service of a
	// cluster-scoped child, which cannot carry an owner reference to it.
	AnnotationOwner    = "odh-serving.opendatahub.io/owner"
	AnnotationOwnerUID = "odh-serving.opendatahub.io/owner-uid"
)

// ownerReference is the controller reference children carry.
func ownerReference(svc *v1alpha2.LLMInferenceService) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: v1alpha2.GroupVersion.String(), Kind: "LLMInferenceService",
		Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes,
	}
}

// claim marks a desired child as the service's: a controller owner
// reference, or the owner annotations for a cluster-scoped child, and then
// the hash of the whole desired object.
func claim(u *unstructured.Unstructured, svc *v1alpha2.LLMInferenceService, k kind) error {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if k.clusterScoped {
		ann[AnnotationOwner] = svc.Namespace + "/" + svc.Name
		ann[AnnotationOwnerUID] = string(svc.UID)
	} else {
		u.SetOwnerReferences([]metav1.OwnerReference{ownerReference(svc)})
	}
	delete(ann, AnnotationAppliedHash)
	u.SetAnnotations(ann)
	data, err := json.Marshal(u.Object) // maps marshal with sorted keys: stable
	if err != nil {
		return fmt.Errorf("hash %s %s: %w", k.gvk.Kind, u.GetName(), err)
	}
	sum := sha256.Sum256(data)
	ann[AnnotationAppliedHash] = hex.EncodeToString(sum[:12])
	u.SetAnnotations(ann)
	return nil
}

// controls reports whether obj is the service's child.
func controls(svc *v1alpha2.LLMInferenceService, obj client.Object, k kind) bool {
	if k.clusterScoped {
		return svc.UID != "" && obj.GetAnnotations()[AnnotationOwnerUID] == string(svc.UID)
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == svc.UID
}

// upToDate reports whether live already holds desired: the same applied
// hash, and every field desired sets has the same value live. Fields the
// API server defaults, or other managers add, do not count. Otherwise it
// says what differs.
func upToDate(desired *unstructured.Unstructured, live client.Object) (string, error) {
	if h := live.GetAnnotations()[AnnotationAppliedHash]; h != desired.GetAnnotations()[AnnotationAppliedHash] {
		return "metadata.annotations[" + AnnotationAppliedHash + "]", nil
	}
	var liveMap map[string]any
	if u, ok := live.(*unstructured.Unstructured); ok {
		liveMap = u.Object
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
		if err != nil {
			return "", fmt.Errorf("convert live %T %s: %w", live, live.GetName(), err)
		}
		liveMap = m
	}
	for k, v := range desired.Object {
		switch k {
		case "apiVersion", "kind", "status":
			continue // typed objects from the cache carry no type meta
		case "metadata":
			dm, _ := v.(map[string]any)
			lm, _ := liveMap["metadata"].(map[string]any)
			for mk, mv := range dm {
				if mk == "ownerReferences" {
					continue // checked by controls; others may add their own
				}
				if d := difference(mv, lm[mk], "metadata."+mk); d != "" {
					return d, nil
				}
			}
		default:
			if d := difference(v, liveMap[k], k); d != "" {
				return d, nil
			}
		}
	}
	return "", nil
}

// difference returns the path of the first field of desired that live does
// not hold, or "" when live holds them all. Maps may have more keys live.
// Lists of objects must hold the desired items in order, with others
// allowed between them; lists of scalars must be equal. An empty or null
// desired value sets no field, so it matches anything: the API server
// drops or defaults it.
func difference(desired, live any, path string) string {
	switch d := desired.(type) {
	case map[string]any:
		if len(d) == 0 {
			return ""
		}
		l, ok := live.(map[string]any)
		if !ok {
			return path
		}
		for _, k := range slices.Sorted(maps.Keys(d)) {
			if diff := difference(d[k], l[k], path+"."+k); diff != "" {
				return diff
			}
		}
		return ""
	case []any:
		if len(d) == 0 {
			return ""
		}
		l, ok := live.([]any)
		if !ok {
			return path
		}
		if !objectList(d) {
			if len(d) != len(l) {
				return path
			}
			for i := range d {
				if !scalarEqual(d[i], l[i]) {
					return fmt.Sprintf("%s[%d]", path, i)
				}
			}
			return ""
		}
		j := 0
		for i, item := range d {
			for j < len(l) && difference(item, l[j], "") != "" {
				j++
			}
			if j == len(l) {
				// Name the field of the item at the same index, if any.
				if i < len(l) {
					return difference(item, l[i], fmt.Sprintf("%s[%d]", path, i))
				}
				return fmt.Sprintf("%s[%d]", path, i)
			}
			j++
		}
		return ""
	case nil:
		return ""
	default:
		return when(!scalarEqual(desired, live), path)
	}
}

// when returns path if cond holds; "" otherwise. An empty path still
// signals a difference to the list matching, so it becomes ".".
func when(cond bool, path string) string {
	if !cond {
		return ""
	}
	if path == "" {
		return "."
	}
	return path
}

func objectList(items []any) bool {
	for _, i := range items {
		if _, ok := i.(map[string]any); !ok {
			return false
		}
	}
	return true
}

// scalarEqual compares leaf values; numbers compare by value whatever
// their Go type (JSON decoding and typed conversion differ).
func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// applyChild server-side applies one claimed child unless the live object
// already holds it. It returns whether it wrote.
func (r *Reconciler) applyChild(ctx context.Context, svc *v1alpha2.LLMInferenceService, u *unstructured.Unstructured, k kind) (bool, error) {
	live := k.newObject()
	key := client.ObjectKeyFromObject(u)
	// While the kind's cache is behind (freshness), the API server says
	// what is live (r.client): a child written since is not applied again.
	err := r.client.Get(ctx, key, live)
	switch {
	case err == nil:
		if !controls(svc, live, k) {
			return false, &notControlledError{kind: k.gvk.Kind, namespace: key.Namespace, name: key.Name}
		}
		id := verifiedID{gvk: k.gvk, key: key}
		hash := u.GetAnnotations()[AnnotationAppliedHash]
		if r.verified.holds(id, live, hash) {
			return false, nil
		}
		diff, err := upToDate(u, live)
		if err != nil {
			return false, err
		}
		if diff == "" {
			r.verified.record(id, live, hash)
			return false, nil
		}
		ctrl.LoggerFrom(ctx).V(1).Info("applying a child that differs", "kind", k.gvk.Kind, "name", key.Name, "field", diff)
		if leavesReplicas(u, k) {
			if err := r.handOverReplicas(ctx, key, k); err != nil {
				return false, err
			}
		}
	case apierrors.IsNotFound(err):
		if _, selected := selectedKinds[k.gvk]; selected {
			// Only labelled objects of the kind are cached: make sure the
			// name is not someone else's before taking it.
			if err := r.checkUncached(ctx, svc, key, k); err != nil {
				return false, err
			}
		}
	default:
		return false, fmt.Errorf("get %s %s: %w", k.gvk.Kind, key, err)
	}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(convention.FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply %s %s: %w", k.gvk.Kind, key, err)
	}
	return true, nil
}

// checkUncached asks the API server whether the name of a child the cache
// does not hold is taken by an object the service does not control. The
// read is not held to the read limit (limitedReader): one precedes each
// first apply of a child, so these reads are no more than the writes they
// guard, and the limit would hold a thousand new services of 16 children
// back for minutes.
func (r *Reconciler) checkUncached(ctx context.Context, svc *v1alpha2.LLMInferenceService, key client.ObjectKey, k kind) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(k.gvk)
	err := r.owners.Get(ctx, key, meta)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s %s: %w", k.gvk.Kind, key, err)
	}
	if !controls(svc, meta, k) {
		return &notControlledError{kind: k.gvk.Kind, namespace: key.Namespace, name: key.Name}
	}
	return nil
}

// verifiedChildren remembers the children found up to date, as the live
// object was then (UID and resourceVersion) and the applied hash it was
// found to hold, so that the next pass that renders the same child (the
// same hash) and finds the same live object skips the comparison, which
// converts the live object to a map and walks it. Like the certificate
// authority's memo of verified secrets. Safe for concurrent use.
type verifiedChildren struct {
	mu   sync.Mutex
	seen map[verifiedID]verifiedChild
}

type verifiedID struct {
	gvk schema.GroupVersionKind
	key client.ObjectKey
}

type verifiedChild struct {
	uid             types.UID
	resourceVersion string
	hash            string
}

// maxVerified bounds the memo (about 200 bytes an entry); past it, it
// starts again empty.
const maxVerified = 50000

// holds reports whether live, as it is, was found to hold the child whose
// applied hash is hash.
func (v *verifiedChildren) holds(id verifiedID, live client.Object, hash string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	got, ok := v.seen[id]
	return ok && hash != "" && got.hash == hash && got.uid == live.GetUID() && got.resourceVersion == live.GetResourceVersion()
}

func (v *verifiedChildren) record(id verifiedID, live client.Object, hash string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil || len(v.seen) >= maxVerified {
		v.seen = map[verifiedID]verifiedChild{}
	}
	v.seen[id] = verifiedChild{uid: live.GetUID(), resourceVersion: live.GetResourceVersion(), hash: hash}
}

// forget drops a child, once deleted.
func (v *verifiedChildren) forget(id verifiedID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.seen, id)
}

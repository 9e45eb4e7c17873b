package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/api/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

// ConvertPath is where the conversion webhook is served.
const ConvertPath = "/convert"

// maxReviewBytes bounds a ConversionReview body; the API server sends at most
// a list's worth of objects, far below this.
const maxReviewBytes = 64 << 20

// Converter serves ConversionReviews for both kinds. It converts the JSON
// the API server sends rather than typed objects, so fields that are the
// same in both versions come back exactly as they were written: a partial
// pod spec gains no empty "resources: {}" on its way through storage.
type Converter struct{}

func (Converter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReviewBytes)).Decode(&review); err != nil {
		http.Error(w, fmt.Sprintf("decode ConversionReview: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "ConversionReview has no request", http.StatusBadRequest)
		return
	}
	review.Response = convertReview(review.Request)
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&review); err != nil {
		http.Error(w, fmt.Sprintf("encode ConversionReview: %v", err), http.StatusInternalServerError)
	}
}

func convertReview(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, in := range req.Objects {
		out, err := convertObject(in.Raw, req.DesiredAPIVersion)
		if err != nil {
			// All or nothing: the API server must not store half a list.
			return &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{
				Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonBadRequest,
			}}
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	return resp
}

func convertObject(raw []byte, desired string) ([]byte, error) {
	obj, err := v1alpha1.DecodeObject(raw)
	if err != nil {
		return nil, err
	}
	from, _ := obj["apiVersion"].(string)
	switch {
	case from == desired:
	case from == v1alpha1.GroupVersion.String() && desired == v1alpha2.GroupVersion.String():
		err = v1alpha1.ToHub(obj)
	case from == v1alpha2.GroupVersion.String() && desired == v1alpha1.GroupVersion.String():
		err = v1alpha1.FromHub(obj)
	default:
		return nil, fmt.Errorf("cannot convert %s to %s", from, desired)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

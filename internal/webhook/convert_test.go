package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/internal/webhook"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func review(t *testing.T, desired string, objects ...string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	req := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "42", DesiredAPIVersion: desired},
	}
	for _, o := range objects {
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	webhook.Converter{}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, webhook.ConvertPath, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "42" {
		t.Fatalf("response %+v does not answer request 42", out.Response)
	}
	return out.Response
}

func TestConverterPassesUnchangedFieldsThroughExactly(t *testing.T) {
	in := `{"apiVersion":"serving.kserve.io/v1alpha1","kind":"LLMInferenceService","metadata":{"name":"a","namespace":"n"},` +
		`"spec":{"model":{"uri":"hf://x/y","criticality":"Sheddable"},"template":{"containers":[{"name":"main","futureField":{"kept":true}}]},` +
		`"router":{"scheduler":{"pool":{"spec":{"selector":{"app":"a"},"targetPortNumber":8000}}}}}}`
	resp := review(t, "serving.kserve.io/v1alpha2", in, in)
	if resp.Result.Status != metav1.StatusSuccess || len(resp.ConvertedObjects) != 2 {
		t.Fatalf("result %+v with %d objects, want success with 2", resp.Result, len(resp.ConvertedObjects))
	}
	got := string(resp.ConvertedObjects[0].Raw)
	want := `{"apiVersion":"serving.kserve.io/v1alpha2","kind":"LLMInferenceService","metadata":{"annotations":{"serving.kserve.io/criticality":"Sheddable"},"name":"a","namespace":"n"},` +
		`"spec":{"model":{"uri":"hf://x/y"},"router":{"scheduler":{"pool":{"spec":{"selector":{"matchLabels":{"app":"a"}},"targetPorts":[{"number":8000}]}}}},` +
		`"template":{"containers":[{"futureField":{"kept":true},"name":"main"}]}}}`
	if got != want {
		t.Errorf("converted\n got %s\nwant %s", got, want)
	}

	back := review(t, "serving.kserve.io/v1alpha1", got)
	var orig, roundTrip any
	if err := json.Unmarshal([]byte(in), &orig); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back.ConvertedObjects[0].Raw, &roundTrip); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(orig)
	b, _ := json.Marshal(roundTrip)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip changed the object:\n got %s\nwant %s", b, a)
	}
}

func TestConverterFailsWholeReviewOnBadObject(t *testing.T) {
	good := `{"apiVersion":"serving.kserve.io/v1alpha1","kind":"LLMInferenceService","metadata":{"name":"good"}}`
	bad := `{"apiVersion":"serving.kserve.io/v1alpha1","kind":"LLMInferenceService","metadata":{"name":"bad","namespace":"n",` +
		`"annotations":{"serving.kserve.io/conversion-pool-spec":"{broken"}},"spec":{"router":{"scheduler":{"pool":{"spec":{}}}}}}`
	resp := review(t, "serving.kserve.io/v1alpha2", good, bad)
	if resp.Result.Status != metav1.StatusFailure || len(resp.ConvertedObjects) != 0 {
		t.Fatalf("result %+v with %d objects, want failure with none", resp.Result, len(resp.ConvertedObjects))
	}
	if !strings.Contains(resp.Result.Message, "LLMInferenceService n/bad") || !strings.Contains(resp.Result.Message, "conversion-pool-spec") {
		t.Errorf("message %q must name the object and the annotation", resp.Result.Message)
	}
}

func TestConverterRejectsUnknownVersion(t *testing.T) {
	resp := review(t, "serving.kserve.io/v1beta1", `{"apiVersion":"serving.kserve.io/v1alpha1","kind":"LLMInferenceService"}`)
	if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, "cannot convert serving.kserve.io/v1alpha1 to serving.kserve.io/v1beta1") {
		t.Errorf("result %+v", resp.Result)
	}
}

package certs_test

import (
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/opendatahub-io/odh-serving/internal/certs"
)

func apiService(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": "modelserving.opendatahub.io", "version": "v1alpha1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"name": "odh-serving-api-server", "namespace": systemNS, "port": int64(443)},
		},
	}}
	return u
}

// TestAPIServiceCerts: the first Ensure makes the CA, the API server's
// secret for its Service's names, the CA bundle ConfigMap in its
// namespace (for the MaaS gateway's BackendTLSPolicy) and injects the CA
// bundle into the APIService; the second writes nothing. Without the
// APIService the secret and the ConfigMap are kept all the same.
func TestAPIServiceCerts(t *testing.T) {
	const name = "v1alpha1.modelserving.opendatahub.io"
	secret := types.NamespacedName{Namespace: systemNS, Name: "odh-serving-api-server-cert"}
	names := []string{"odh-serving-api-server.opendatahub.svc", "odh-serving-api-server.opendatahub.svc.cluster.local"}
	for _, withAPIService := range []bool{true, false} {
		c := newClient(t)
		if withAPIService {
			if err := c.Create(t.Context(), apiService(name)); err != nil {
				t.Fatal(err)
			}
			c.take()
		}
		a := &certs.APIServiceCerts{
			Client: c, CA: &certs.Authority{Secret: caKey}, Secret: secret, ServiceName: "odh-serving-api-server",
			APIService: name, Clock: testingclock.NewFakeClock(t0),
		}
		res, err := a.Ensure(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3) // the CA, the server's secret and the bundle ConfigMap
		if withAPIService {
			want++
		}
		if n := c.take(); !res.Changed || n != want {
			t.Fatalf("APIService %v: first Ensure: Changed=%v with %d writes, want %d", withAPIService, res.Changed, n, want)
		}
		s := getSecret(t, c, secret)
		leafOf(t, s, names, t0)
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: systemNS, Name: "odh-serving-ca-bundle"}, cm); err != nil {
			t.Fatalf("the CA bundle ConfigMap: %v", err)
		}
		if cm.Data["ca.crt"] != string(s.Data["ca.crt"]) {
			t.Errorf("the CA bundle ConfigMap holds %q, want the secret's ca.crt", cm.Data["ca.crt"])
		}
		if withAPIService {
			got := apiService(name)
			if err := c.Get(t.Context(), types.NamespacedName{Name: name}, got); err != nil {
				t.Fatal(err)
			}
			bundle, _, _ := unstructured.NestedString(got.Object, "spec", "caBundle")
			if bundle != base64.StdEncoding.EncodeToString(s.Data["ca.crt"]) {
				t.Errorf("APIService caBundle %q is not the secret's ca.crt", bundle)
			}
		}
		if res, err := a.Ensure(t.Context()); err != nil || res.Changed || c.take() != 0 {
			t.Errorf("APIService %v: second Ensure: Changed=%v, err %v; want no write", withAPIService, res.Changed, err)
		}
	}
	if _, err := (&certs.APIServiceCerts{}).Ensure(t.Context()); err == nil {
		t.Error("no client, CA or names: no error")
	}
}

package gateway

import (
	"context"
	"flag"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var (
	// cp is the control plane with GIE's and Gateway API's CRDs that the
	// tests on an API server share, each in namespaces of its own
	// (deleteAtEnd).
	cp *controlplane.ControlPlane
	// nodes is the kwok cluster on cp, started by the first test that
	// needs pods to run.
	nodes testenv.Cluster
)

// TestMain runs the tests' processes at testenv's GOGC, unless GOGC is set,
// and stops the shared control plane and cluster after them.
func TestMain(m *testing.M) {
	flag.Parse()
	testenv.UseTestGOGC()
	testenv.MainWith(m, &cp, controlplane.Options{CRDs: []string{crds.GIE, crds.GatewayAPI}}, &nodes)
}

// deleteAtEnd deletes the namespace ns when the test ends. Its Gateways go
// first, and the test waits until they are gone: the test gateway serves
// every Gateway of the cluster, so another test's would take the addresses
// and ports the next test's gateway hands out. The rest goes with the
// namespace, unwaited.
func deleteAtEnd(t *testing.T, c client.Client, ns string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		if err := c.DeleteAllOf(ctx, &gatewayv1.Gateway{}, client.InNamespace(ns)); err != nil {
			t.Errorf("delete the Gateways of namespace %s: %v", ns, err)
		}
		testenv.Eventually(t, "the Gateways of namespace "+ns+" gone", func() error {
			gws := &gatewayv1.GatewayList{}
			if err := c.List(ctx, gws, client.InNamespace(ns)); err != nil {
				return err
			}
			if n := len(gws.Items); n > 0 {
				return fmt.Errorf("%d left", n)
			}
			return nil
		})
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
}

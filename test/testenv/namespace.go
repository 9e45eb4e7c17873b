package testenv

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	nsSeq  atomic.Int64
	nonDNS = regexp.MustCompile(`[^a-z0-9]+`)
)

// NewNamespace creates a namespace for one test and returns its name:
// prefix, the test's name (cut to 30 characters) and a number, so that
// runs with -count>1 do not collide, e.g. "t-testfoo-bar-7".
func NewNamespace(tb testing.TB, c client.Client, prefix string) string {
	tb.Helper()
	base := nonDNS.ReplaceAllString(strings.ToLower(tb.Name()), "-")
	base = strings.Trim(base[:min(len(base), 30)], "-")
	name := fmt.Sprintf("%s-%s-%d", prefix, base, nsSeq.Add(1))
	if err := c.Create(tb.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// EnsureNamespace creates the namespace name unless it exists: for tests
// whose namespace has a fixed name, which another test may have made.
func EnsureNamespace(tb testing.TB, c client.Client, name string) {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(tb.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("create namespace %s: %v", name, err)
	}
}

// DeleteNamespaceAtEnd deletes the namespace ns when the test ends and
// waits, up to timeout, until it is gone: on a cluster with nodes
// (test/kwokcluster) its pods hold the nodes' GPUs and pod slots, which
// the next test, or the next run with -count>1, needs free, and the
// deletion of many objects loads the API server and the controller
// manager, which the next test needs too.
func DeleteNamespaceAtEnd(tb testing.TB, c client.Client, ns string, timeout time.Duration) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx := context.WithoutCancel(tb.Context())
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			tb.Fatalf("delete namespace %s: %v", ns, err)
		}
		Within(tb, timeout, "namespace "+ns+" is gone", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
				return err
			}
			return fmt.Errorf("%s, %d pods left", obj.Status.Phase, len(pods.Items))
		})
	})
}

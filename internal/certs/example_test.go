package certs_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/naming"
	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// A 90-day leaf is renewed in the last third of its life.
func ExampleNeedsRotation() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"chat-kserve-workload-svc.team-a.svc", "chat-kserve-workload-svc.team-a.svc.cluster.local"}
	ca, err := certs.NewCA("example CA", now, certs.DefaultCALifetime)
	if err != nil {
		panic(err)
	}
	leaf, err := certs.Issue(ca, names, now, certs.DefaultLeafLifetime)
	if err != nil {
		panic(err)
	}
	renew := certs.RenewAt(leaf.Cert, certs.DefaultRenewWindow)
	fmt.Println("valid", leaf.Cert.NotBefore.Format(time.DateTime), "to", leaf.Cert.NotAfter.Format(time.DateTime))
	fmt.Println("renew at", renew.Format(time.DateTime))
	for _, at := range []time.Time{now, renew} {
		rotate, why := certs.NeedsRotation(leaf.Cert, names, at, certs.DefaultRenewWindow)
		fmt.Printf("%s: %v %q\n", at.Format(time.DateTime), rotate, why)
	}
	rotate, why := certs.NeedsRotation(leaf.Cert, names[:1], now, certs.DefaultRenewWindow)
	fmt.Printf("one name fewer: %v %q\n", rotate, why)
	// Output:
	// valid 2025-12-31 23:55:00 to 2026-04-01 00:00:00
	// renew at 2026-03-01 23:58:20
	// 2026-01-01 00:00:00: false ""
	// 2026-03-01 23:58:20: true "expires within the renewal window"
	// one name fewer: true "names differ"
}

// How the controller wires certificates in the self-signed mode (compiled,
// not run: it needs a cluster).
func Example_controller() {
	var (
		ctx    context.Context
		cfg    *rest.Config
		mgr    manager.Manager
		svc    *v1alpha2.LLMInferenceService
		system = "opendatahub"
	)
	// One CA for the reconciler and the webhook; read it past the cache.
	ca := &certs.Authority{
		Secret: types.NamespacedName{Namespace: system, Name: certs.CASecretName},
		Reader: mgr.GetAPIReader(),
	}

	// Before mgr.Start: the webhook server needs its files.
	direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		panic(err)
	}
	webhookCerts := &certs.WebhookCerts{
		Client: direct, Namespace: system, ServiceName: "odh-serving-webhook",
		CertDir: "/tmp/k8s-webhook-server/serving-certs", CA: ca,
	}
	if _, err := webhookCerts.Ensure(ctx); err != nil {
		panic(err)
	}
	if err := mgr.Add(webhookCerts); err != nil {
		panic(err)
	}

	// In Reconcile, for each service. The name is the one the presets mount.
	secret, err := naming.ChildName(svc.Name, "-kserve-self-signed-certs")
	if err != nil {
		panic(err)
	}
	now := time.Now()
	res, err := ca.EnsureServingSecret(ctx, mgr.GetClient(),
		types.NamespacedName{Namespace: svc.Namespace, Name: secret},
		[]string{svc.Name + "-kserve-workload-svc." + svc.Namespace + ".svc"},
		metav1.NewControllerRef(svc, v1alpha2.GroupVersion.WithKind("LLMInferenceService")), now)
	if err != nil {
		panic(err)
	}
	fmt.Println("requeue after", res.RequeueAfter(now))
}

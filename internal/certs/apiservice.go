package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// gvkAPIService is the aggregation layer's registration of an extension
// API server; unstructured, so the kube-aggregator module is not needed
// for one field.
var gvkAPIService = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// APIServiceCerts keeps an extension API server's serving certificate
// valid in the self-signed mode (the MaaS API server's), as WebhookCerts
// does the webhook's: it loads the shared CA, puts its bundle into the
// APIService's spec.caBundle when it differs (the cluster's API server
// then trusts the extension server it proxies to), and keeps the secret
// Secret valid for <ServiceName>.<namespace>.svc[.cluster.local]. The
// server mounts the secret and reloads it when it changes. It also keeps
// the bundle in the ConfigMap convention.CABundleName of that namespace,
// for the gateways that reach the server (the MaaS gateway's
// BackendTLSPolicy). A missing APIService is skipped; the secret and the
// ConfigMap are kept all the same.
type APIServiceCerts struct {
	// Client reads and writes the secret and the APIService, from the API
	// server (not a cache).
	Client client.Client
	// CA signs the certificate; share the reconciler's. Required.
	CA *Authority
	// Secret is the serving secret, in the Service's namespace. Required.
	Secret types.NamespacedName
	// ServiceName is the extension server's Service. Required.
	ServiceName string
	// APIService is the APIService to inject the bundle into. Required.
	APIService string
	// CheckInterval: default DefaultCheckInterval.
	CheckInterval time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
}

var _ manager.LeaderElectionRunnable = (*APIServiceCerts)(nil)

// Ensure makes the certificate and the bundle injection right, writing
// only what differs.
func (a *APIServiceCerts) Ensure(ctx context.Context) (Result, error) {
	if a.Client == nil || a.CA == nil || a.Secret.Name == "" || a.Secret.Namespace == "" || a.ServiceName == "" || a.APIService == "" {
		return Result{}, errors.New("API service certificates: Client, CA, Secret, ServiceName and APIService are required")
	}
	now := a.clock().Now()
	st, err := a.CA.current(ctx, a.Client, a.Client, now)
	if err != nil {
		return Result{}, fmt.Errorf("API service certificates: %w", err)
	}
	injected, err := a.inject(ctx, st.bundle)
	if err != nil {
		return Result{}, err
	}
	published, err := a.publish(ctx, st.bundle)
	if err != nil {
		return Result{}, err
	}
	base := a.ServiceName + "." + a.Secret.Namespace + ".svc"
	res, _, err := a.CA.ensureLeaf(ctx, a.Client, a.Client, st, a.Secret, []string{base, base + ".cluster.local"}, nil, now)
	if err != nil {
		return Result{}, fmt.Errorf("API service certificates: %w", err)
	}
	res.Changed = res.Changed || injected || published
	return res, nil
}

// publish keeps the CA bundle in the ConfigMap convention.CABundleName of
// the Service's namespace, which the MaaS gateway's BackendTLSPolicy to
// the server names (PublishBundle: written only when missing or another
// CA's, and never one that is not ours).
func (a *APIServiceCerts) publish(ctx context.Context, bundle []byte) (bool, error) {
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: a.Secret.Namespace, Name: convention.CABundleName}
	if err := a.Client.Get(ctx, key, cm); err == nil && cm.Data[convention.CABundleKey] == string(bundle) {
		return false, nil
	}
	if err := PublishBundle(ctx, a.Client, a.Client, &corev1.ConfigMap{}, a.Secret.Namespace, bundle); err != nil {
		return false, fmt.Errorf("API service certificates: %w", err)
	}
	return true, nil
}

func (a *APIServiceCerts) inject(ctx context.Context, bundle []byte) (bool, error) {
	svc := &unstructured.Unstructured{}
	svc.SetGroupVersionKind(gvkAPIService)
	err := a.Client.Get(ctx, types.NamespacedName{Name: a.APIService}, svc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get APIService %s: %w", a.APIService, err)
	}
	have, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle")
	if decoded, err := base64.StdEncoding.DecodeString(have); err == nil && bytes.Equal(decoded, bundle) {
		return false, nil
	}
	orig := svc.DeepCopy()
	if err := unstructured.SetNestedField(svc.Object, base64.StdEncoding.EncodeToString(bundle), "spec", "caBundle"); err != nil {
		return false, fmt.Errorf("APIService %s: %w", a.APIService, err)
	}
	if err := a.Client.Patch(ctx, svc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), client.FieldOwner(InjectorFieldManager)); err != nil {
		return false, fmt.Errorf("inject CA bundle into APIService %s: %w", a.APIService, err)
	}
	return true, nil
}

// Start runs Ensure now and then as WebhookCerts.Start does.
func (a *APIServiceCerts) Start(ctx context.Context) error {
	return keep(ctx, "apiservice-certs", a.CheckInterval, a.clock(), a.Ensure)
}

// NeedLeaderElection is true: one replica writes, and no file is needed
// locally.
func (a *APIServiceCerts) NeedLeaderElection() bool { return true }

func (a *APIServiceCerts) clock() clock.Clock {
	if a.Clock == nil {
		return clock.RealClock{}
	}
	return a.Clock
}

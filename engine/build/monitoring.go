package build

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ComponentMonitoring labels the monitors and the metrics reader.
const ComponentMonitoring = "llminferenceservice-monitoring"

// MetricsPortName is the name of the model servers' HTTPS port (8000) in
// every shipped preset: the port the engine monitor scrapes.
const MetricsPortName = "https"

// monitors adds, with Monitoring on, a PodMonitor for the service's model
// servers and a ServiceMonitor for its endpoint picker, with what the
// endpoint picker's one needs: its metrics endpoint checks that the caller
// may get the non-resource URL /metrics, so a ServiceAccount of the
// service's own, its token and a binding to
// convention.MetricsReaderClusterRole. Each monitor is the service's and
// goes with it.
func (b *builder) monitors() {
	if !b.opts.Monitoring {
		return
	}
	if b.builtService(b.names.workloadService) {
		b.add(b.engineMonitor())
	}
	if b.builtService(b.names.eppService) && b.eppHasMetricsPort() {
		b.add(b.metricsReader()...)
		b.add(b.eppMonitor())
	}
}

// relabelings name the service, role and component on every series, as
// ODH's KServe monitors do.
func relabelings(role bool) []any {
	out := []any{map[string]any{
		"sourceLabels": []any{"__meta_kubernetes_pod_label_app_kubernetes_io_name"},
		"action":       "replace", "targetLabel": "llm_isvc_name",
	}}
	if role {
		out = append(out, map[string]any{
			"sourceLabels": []any{"__meta_kubernetes_pod_label_llm_d_ai_role"},
			"action":       "replace", "targetLabel": "llm_isvc_role",
		})
	}
	return append(out, map[string]any{
		"sourceLabels": []any{"__meta_kubernetes_pod_label_app_kubernetes_io_component"},
		"action":       "replace", "regex": "llminferenceservice-(.*)", "replacement": "$1", "targetLabel": "llm_isvc_component",
	})
}

// engineMonitor scrapes the model servers over HTTPS, trusting the CA of
// the certificate mode and checking the workload Service's name, which
// every mode puts in the certificate the pods serve (Prometheus scrapes
// pod IPs, which it is not issued for).
func (b *builder) engineMonitor() *unstructured.Unstructured {
	ca := map[string]any{"secret": map[string]any{"name": b.names.tlsSecret, "key": convention.CABundleKey}}
	if b.opts.CertMode == convention.CertServiceCA {
		ca = map[string]any{"configMap": map[string]any{"name": convention.ServiceCAConfigMap, "key": convention.ServiceCAConfigMapKey}}
	}
	return b.custom("monitoring.coreos.com/v1", "PodMonitor", b.names.engineMonitor, ComponentMonitoring, map[string]any{
		"selector": map[string]any{
			"matchLabels": map[string]any{convention.LabelPartOf: convention.PartOf, convention.LabelName: b.svc.Name},
			"matchExpressions": []any{map[string]any{
				"key": convention.LabelComponent, "operator": "In", "values": anySlice(workloadComponents),
			}},
		},
		"podMetricsEndpoints": []any{map[string]any{
			"port":   MetricsPortName,
			"scheme": "https",
			"tlsConfig": map[string]any{
				"ca":         ca,
				"serverName": b.names.workloadService + "." + b.svc.Namespace + ".svc",
			},
			"relabelings": relabelings(true),
		}},
	})
}

// eppMonitor scrapes the endpoint picker's metrics port with the metrics
// reader's token.
func (b *builder) eppMonitor() *unstructured.Unstructured {
	return b.custom("monitoring.coreos.com/v1", "ServiceMonitor", b.names.eppMonitor, ComponentMonitoring, map[string]any{
		"selector": map[string]any{"matchLabels": anyValues(b.labels(ComponentScheduler))},
		"endpoints": []any{map[string]any{
			"port": "metrics",
			"authorization": map[string]any{
				"type":        "Bearer",
				"credentials": map[string]any{"name": b.names.metricsReader, "key": corev1.ServiceAccountTokenKey},
			},
			"relabelings": relabelings(false),
		}},
	})
}

// metricsReader is the ServiceAccount whose token the endpoint picker's
// monitor sends, the token's Secret and the ClusterRoleBinding that lets
// it read /metrics.
func (b *builder) metricsReader() []Object {
	name := b.names.metricsReader
	no := false
	sa := b.serviceAccount(name, ComponentMonitoring)
	sa.AutomountServiceAccountToken = &no
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: b.meta(name, ComponentMonitoring),
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	secret.Annotations = map[string]string{corev1.ServiceAccountNameKey: name}
	// The controller caches only the secrets it manages.
	secret.Labels[convention.LabelManagedBy] = convention.ManagedBy
	auth := &rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		// Cluster-scoped: no namespace, and no owner reference can reach it.
		ObjectMeta: metav1.ObjectMeta{Name: b.names.metricsReaderAuth, Labels: b.labels(ComponentMonitoring)},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: convention.MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: b.svc.Namespace}},
	}
	return []Object{sa, secret, auth}
}

// eppHasMetricsPort reports whether the endpoint picker's Service has a
// port named metrics.
func (b *builder) eppHasMetricsPort() bool {
	for _, o := range b.out {
		if s, ok := o.(*corev1.Service); ok && s.Name == b.names.eppService {
			for _, p := range s.Spec.Ports {
				if p.Name == "metrics" {
					return true
				}
			}
		}
	}
	return false
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

package build

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// ComponentShadowService labels the DestinationRule of Istio's shadow
// Service of the pool.
const ComponentShadowService = "llminferenceservice-shadow-service"

// gatewayTLS tells the gateway to originate TLS to what the route and the
// pool send traffic to: the workload Service, the pool's endpoints (through
// Istio's shadow Service) and the endpoint picker. Each gets the CA that
// signs our serving certificates, never insecureSkipVerify; SNI and the
// name checked are the Service's cluster name, which every certificate
// mode puts in the certificate.
func (b *builder) gatewayTLS() {
	if b.spec.Router == nil || b.opts.GatewayTLS == "" || b.opts.GatewayTLS == convention.GatewayTLSNone {
		return
	}
	workload := b.builtService(b.names.workloadService)
	epp := b.builtService(b.names.eppService)
	pool := b.builtIn(GroupPoolV1, "InferencePool", b.names.pool)
	workloadHost := b.host(b.names.workloadService)
	switch b.opts.GatewayTLS {
	case convention.GatewayTLSIstio:
		if epp {
			b.add(b.destinationRule(b.names.eppTLS, ComponentScheduler, b.host(b.names.eppService), b.host(b.names.eppService)))
		}
		if workload {
			b.add(b.destinationRule(b.names.workloadService, ComponentWorkload, workloadHost, workloadHost))
		}
		// The gateway sends the pool's traffic to the endpoints of the
		// Service Istio makes for the pool, whose name only the cluster
		// knows; the pods serve the workload Service's certificate.
		if pool && workload && b.opts.IstioShadowService != "" {
			b.add(b.destinationRule(b.names.shadowTLS, ComponentShadowService, b.host(b.opts.IstioShadowService), workloadHost))
		}
	case convention.GatewayTLSBackendTLSPolicy:
		if epp {
			b.add(b.backendTLSPolicy(b.names.eppTLS, ComponentScheduler, b.host(b.names.eppService), b.names.eppService, false))
		}
		if workload {
			b.add(b.backendTLSPolicy(b.names.workloadService, ComponentWorkload, workloadHost, b.names.workloadService, pool))
		}
	}
}

// builtService reports whether a Service named name was built.
func (b *builder) builtService(name string) bool { return b.builtIn("", "Service", name) }

// builtIn reports whether a child of group and kind named name was built.
func (b *builder) builtIn(group, kind, name string) bool {
	for _, o := range b.out {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Group == group && gvk.Kind == kind && o.GetName() == name {
			return true
		}
	}
	return false
}

// host is the cluster name of the Service named service.
func (b *builder) host(service string) string {
	return service + "." + b.svc.Namespace + ".svc.cluster.local"
}

// destinationRule makes an Istio gateway originate TLS to host, with SNI
// and the name checked set to sni. In the service-ca mode the CA is the
// file OpenShift mounts into every pod; otherwise the Secret
// convention.CABundleName in the gateway's namespace (Istio reads a
// credentialName from the proxy's namespace only).
func (b *builder) destinationRule(name, component, host, sni string) *unstructured.Unstructured {
	tls := map[string]any{"mode": "SIMPLE", "sni": sni, "subjectAltNames": []any{sni}}
	if b.opts.CertMode == convention.CertServiceCA {
		tls["caCertificates"] = convention.ServiceCAFile
	} else {
		tls["credentialName"] = convention.CABundleName
	}
	return b.custom("networking.istio.io/v1", "DestinationRule", name, component, map[string]any{
		"host":          host,
		"exportTo":      []any{"*"},
		"trafficPolicy": map[string]any{"tls": tls},
	})
}

// backendTLSPolicy makes a Gateway API gateway originate TLS to service
// (and to the pool's endpoints, with pool), checking hostname against the
// CA in the ConfigMap convention.CABundleName of the service's namespace.
func (b *builder) backendTLSPolicy(name, component, hostname, service string, pool bool) *unstructured.Unstructured {
	targets := []any{map[string]any{"group": "", "kind": "Service", "name": service}}
	if pool {
		// Implementation-specific: gateways that send a pool's traffic to
		// its endpoints directly read the policy of the pool.
		targets = append(targets, map[string]any{"group": GroupPoolV1, "kind": "InferencePool", "name": b.names.pool})
	}
	return b.custom("gateway.networking.k8s.io/v1", "BackendTLSPolicy", name, component, map[string]any{
		"targetRefs": targets,
		"validation": map[string]any{
			"hostname":          hostname,
			"caCertificateRefs": []any{map[string]any{"group": "", "kind": "ConfigMap", "name": convention.CABundleName}},
		},
	})
}

// custom is a child of a kind odh-serving has no Go type for (Istio's,
// cert-manager's, the Prometheus Operator's, ...), with the metadata of
// meta.
func (b *builder) custom(apiVersion, kind, name, component string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": b.svc.Namespace, "labels": anyValues(b.labels(component))},
		"spec":       spec,
	}}
}

// anyValues is m as an unstructured object holds it.
func anyValues(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

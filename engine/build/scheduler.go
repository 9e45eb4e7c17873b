package build

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gieapiv1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	gieapixv1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Scheduler component and ports.
const (
	ComponentScheduler = "llminferenceservice-router-scheduler"
	EPPGRPCPort        = 9002
	// FailOpen keeps traffic flowing to the pool when the endpoint picker
	// is down. KServe's v1 pools lost it silently and fell back to the CRD's
	// FailClose; ours always say which.
	FailOpen = "FailOpen"
)

// eppPorts are the endpoint picker's container ports that its Service
// exposes, by container port name.
var eppPorts = map[string]*string{"grpc": ptr("kubernetes.io/h2c"), "grpc-health": nil, "metrics": nil, "zmq": nil}

func (b *builder) scheduler() error {
	r := b.spec.Router
	if r == nil || r.Scheduler == nil {
		return nil
	}
	s := r.Scheduler
	if s.Pool != nil && s.Pool.Ref != nil {
		return nil // the pool and its endpoint picker are the user's
	}
	if err := b.pools(s); err != nil {
		return err
	}
	if s.Template == nil {
		return nil
	}
	pod := s.Template.DeepCopy()
	if b.opts.CertMode == convention.CertServiceCA || b.opts.CertMode == convention.CertManager {
		for i := range pod.Volumes {
			if v := &pod.Volumes[i]; v.Name == TLSVolume && v.Secret != nil {
				v.Secret.SecretName = b.names.eppTLSSecret
			}
		}
	}
	// Always the ServiceAccount made here: the only one bound to
	// system:auth-delegator. Validation refuses a template that names
	// another (validation.MsgSchedulerServiceAccount); this holds even for
	// a spec that skipped it.
	sa := b.names.eppSA
	pod.ServiceAccountName, pod.DeprecatedServiceAccount = sa, ""
	b.add(b.serviceAccount(sa, ComponentScheduler))
	labels := b.labels(ComponentScheduler)
	replicas := int32(1)
	if s.Replicas != nil {
		replicas = *s.Replicas
	}
	setSchedulerConfig(s, pod)
	setPoolGroup(pod, b.poolGroup())
	b.addSchedulerTracing(pod)
	podLabels, podAnnotations := schedulerPodMeta(s, b.labels(ComponentScheduler))
	b.add(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(b.names.epp, ComponentScheduler),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations}, Spec: *pod},
		},
	})
	svc, err := b.eppService(pod)
	if err != nil {
		return err
	}
	b.add(svc)
	b.certificate(b.names.eppCert, b.names.eppService, b.names.eppTLSSecret, ComponentScheduler)
	b.add(b.eppRBAC(sa)...)
	return nil
}

// poolGroup is the API group of the pool the endpoint picker watches: the
// v1alpha2 pool in the alpha2 phase, the only one rendered then, and the
// v1 pool in every later phase (it exists from dual on, and the v1alpha2
// pool is gone once retired).
func (b *builder) poolGroup() string {
	if b.opts.Phase == convention.PhaseAlpha2 {
		return GroupPoolV1alpha2
	}
	return GroupPoolV1
}

// setPoolGroup makes the endpoint picker's --pool-group the given group:
// the value after the flag is replaced wherever the template sets it, and
// the flag is added when it does not (the endpoint picker's own default
// is the v1 group, wrong in the alpha2 phase).
func setPoolGroup(pod *corev1.PodSpec, group string) {
	main := containerIndex(pod.Containers, MainContainer)
	if main < 0 {
		return
	}
	c := &pod.Containers[main]
	found := false
	for i := 0; i < len(c.Args); i++ {
		switch a := c.Args[i]; {
		case (a == "--pool-group" || a == "-pool-group") && i+1 < len(c.Args):
			i++
			c.Args[i] = group
			found = true
		case strings.HasPrefix(a, "--pool-group="), strings.HasPrefix(a, "-pool-group="):
			c.Args[i] = a[:strings.IndexByte(a, '=')+1] + group
			found = true
		}
	}
	if !found {
		c.Args = append(c.Args, "--pool-group", group)
	}
}

// eppService exposes the endpoint picker's grpc, grpc-health and metrics
// container ports, and zmq, where model servers publish KV-cache events.
func (b *builder) eppService(pod *corev1.PodSpec) (*corev1.Service, error) {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.servingCert(b.meta(b.names.eppService, ComponentScheduler), b.names.eppTLSSecret),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: b.labels(ComponentScheduler),
		},
	}
	for _, c := range pod.Containers {
		for _, p := range c.Ports {
			proto, ok := eppPorts[p.Name]
			if !ok {
				continue
			}
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
				Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP, AppProtocol: proto,
			})
		}
	}
	if len(svc.Spec.Ports) == 0 {
		return nil, fmt.Errorf("spec.router.scheduler.template: the endpoint picker has no container port named grpc; its Service needs one")
	}
	return svc, nil
}

// eppRBAC lets the endpoint picker read pods, pools and objectives in its
// namespace, and delegate authentication of its metrics endpoint.
func (b *builder) eppRBAC(sa string) []Object {
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: b.meta(b.names.eppRole, ComponentScheduler),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
			{APIGroups: []string{GroupPoolV1}, Resources: []string{"inferencepools"}, Verbs: read},
			{APIGroups: []string{GroupPoolV1alpha2}, Resources: []string{"inferencepools", "inferenceobjectives", "inferencemodelrewrites"}, Verbs: read},
			{APIGroups: []string{"llm-d.ai"}, Resources: []string{"inferenceobjectives", "inferencemodelrewrites"}, Verbs: read},
		},
	}
	auth := &rbacv1.ClusterRoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		// Cluster-scoped: no namespace, and no owner reference can reach it.
		ObjectMeta: metav1.ObjectMeta{Name: b.names.eppAuth, Labels: b.labels(ComponentScheduler)},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: b.svc.Namespace}},
	}
	return []Object{role, b.roleBinding(b.names.eppRoleBinding, b.names.eppRole, sa, ComponentScheduler), auth}
}

// pools builds the managed InferencePools for the phase: v1 unless the
// cluster only has v1alpha2, and v1alpha2 until the migration retires it.
func (b *builder) pools(s *v1alpha2.SchedulerSpec) error {
	var spec v1alpha2.PoolSpec
	if s.Pool != nil && s.Pool.Spec != nil {
		spec = *s.Pool.Spec.DeepCopy()
	}
	labels := map[string]string{}
	if spec.Selector != nil {
		for k, v := range spec.Selector.MatchLabels {
			labels[k] = v
		}
	}
	// Never empty: the v1 CRD rejects an empty matchLabels.
	labels[convention.LabelPartOf] = convention.PartOf
	labels[convention.LabelName] = b.svc.Name
	labels[convention.LabelKServeComponent] = "workload"

	ports := spec.TargetPorts
	if len(ports) == 0 {
		ports = []v1alpha2.PoolPort{{Number: WorkloadPort}}
	}
	ref := v1alpha2.EndpointPickerRef{}
	if spec.EndpointPickerRef != nil {
		ref = *spec.EndpointPickerRef
	}
	kind := "Service"
	if ref.Kind != nil && *ref.Kind != "" {
		kind = *ref.Kind
	}
	port := int32(EPPGRPCPort)
	if ref.Port != nil && ref.Port.Number != 0 {
		port = ref.Port.Number
	}
	failure := FailOpen
	if ref.FailureMode != nil && *ref.FailureMode != "" {
		failure = *ref.FailureMode
	}
	name := ref.Name
	if name == "" {
		name = b.names.eppService
	}

	meta := b.meta(b.names.pool, ComponentScheduler)
	if b.opts.Phase != convention.PhaseAlpha2 {
		v1 := &gieapiv1.InferencePool{
			TypeMeta:   metav1.TypeMeta{APIVersion: GroupPoolV1 + "/v1", Kind: "InferencePool"},
			ObjectMeta: meta,
			Spec: gieapiv1.InferencePoolSpec{
				Selector: gieapiv1.LabelSelector{MatchLabels: map[gieapiv1.LabelKey]gieapiv1.LabelValue{}},
				EndpointPickerRef: gieapiv1.EndpointPickerRef{
					Kind: gieapiv1.Kind(kind), Name: gieapiv1.ObjectName(name),
					Port: &gieapiv1.Port{Number: gieapiv1.PortNumber(port)}, FailureMode: gieapiv1.EndpointPickerFailureMode(failure),
				},
			},
		}
		if ref.Group != nil {
			g := gieapiv1.Group(*ref.Group)
			v1.Spec.EndpointPickerRef.Group = &g
		}
		for k, v := range labels {
			v1.Spec.Selector.MatchLabels[gieapiv1.LabelKey(k)] = gieapiv1.LabelValue(v)
		}
		for _, p := range ports {
			v1.Spec.TargetPorts = append(v1.Spec.TargetPorts, gieapiv1.Port{Number: gieapiv1.PortNumber(p.Number)})
		}
		b.add(v1)
	}
	if b.opts.Phase != convention.PhaseRetired {
		k := gieapixv1alpha2.Kind(kind)
		pn := gieapixv1alpha2.PortNumber(port)
		fm := gieapixv1alpha2.ExtensionFailureMode(failure)
		alpha := &gieapixv1alpha2.InferencePool{
			TypeMeta:   metav1.TypeMeta{APIVersion: GroupPoolV1alpha2 + "/v1alpha2", Kind: "InferencePool"},
			ObjectMeta: b.meta(b.names.pool, ComponentScheduler),
			Spec: gieapixv1alpha2.InferencePoolSpec{
				Selector:         map[gieapixv1alpha2.LabelKey]gieapixv1alpha2.LabelValue{},
				TargetPortNumber: ports[0].Number,
				ExtensionRef:     gieapixv1alpha2.Extension{Kind: &k, Name: gieapixv1alpha2.ObjectName(name), PortNumber: &pn, FailureMode: &fm},
			},
		}
		if ref.Group != nil {
			g := gieapixv1alpha2.Group(*ref.Group)
			alpha.Spec.ExtensionRef.Group = &g
		}
		for k, v := range labels {
			alpha.Spec.Selector[gieapixv1alpha2.LabelKey(k)] = gieapixv1alpha2.LabelValue(v)
		}
		b.add(alpha)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

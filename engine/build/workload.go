package build

import (
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/convention"
)

// Component label values of the workloads.
const (
	ComponentWorkload              = "llminferenceservice-workload"
	ComponentWorkloadPrefill       = "llminferenceservice-workload-prefill"
	ComponentWorkloadLeader        = "llminferenceservice-workload-leader"
	ComponentWorkloadWorker        = "llminferenceservice-workload-worker"
	ComponentWorkloadLeaderPrefill = "llminferenceservice-workload-leader-prefill"
	ComponentWorkloadWorkerPrefill = "llminferenceservice-workload-worker-prefill"

	// RoutingSidecar is the init container (restartPolicy Always) that
	// fronts a decode pod in prefill/decode serving.
	RoutingSidecar = "llm-d-routing-sidecar"
	// MainContainer is the model server; storage goes into it.
	MainContainer = "main"
	// ModelMountPath is where the model appears in the main container.
	ModelMountPath = "/mnt/models"
	// WorkloadPort is the model server's (or sidecar's) HTTPS port.
	WorkloadPort = 8000
)

// workloadKind is one of the two workloads: main (decode) or prefill.
type workloadKind struct {
	role                                   string // llm-d.ai/role of its serving pods
	component, leader, worker              string // component labels
	deployment, lws, singleSA, multiNodeSA string // names
}

func (b *builder) workloads() error {
	mainRole := "both"
	if b.spec.Prefill != nil {
		mainRole = "decode"
	}
	main := workloadKind{
		role: mainRole, component: ComponentWorkload, leader: ComponentWorkloadLeader, worker: ComponentWorkloadWorker,
		deployment: b.names.deployment, lws: b.names.lws, singleSA: b.names.workloadSA, multiNodeSA: b.names.lws,
	}
	if err := b.workload(&b.spec.WorkloadSpec, main, "spec"); err != nil {
		return err
	}
	if b.spec.Prefill != nil {
		prefill := workloadKind{
			role: "prefill", component: ComponentWorkloadPrefill, leader: ComponentWorkloadLeaderPrefill, worker: ComponentWorkloadWorkerPrefill,
			deployment: b.names.prefillDeployment, lws: b.names.prefillLWS, singleSA: b.names.prefillSA, multiNodeSA: b.names.prefillMNSA,
		}
		if err := b.workload(b.spec.Prefill, prefill, "spec.prefill"); err != nil {
			return err
		}
	}
	b.add(b.workloadService(mainRole))
	b.certificate(b.names.workloadCert, b.names.workloadService, b.names.tlsSecret, ComponentWorkload)
	return nil
}

// workload builds one workload: a Deployment, or a LeaderWorkerSet when a
// worker is set, with the RBAC its pods need.
func (b *builder) workload(w *v1alpha2.WorkloadSpec, k workloadKind, path string) error {
	if w.Template == nil && w.Worker == nil {
		return fmt.Errorf("%s.template: a workload needs a pod template; no preset or baseRef supplied one", path)
	}
	errs := metav1validation.ValidateLabels(w.Labels, field.NewPath(path, "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(w.Annotations, field.NewPath(path, "annotations"))...)
	if len(errs) > 0 {
		return errs.ToAggregate()
	}
	// A scaled workload's replicas belong to its actuator: it has none
	// here, so applying it leaves the actuator's count alone.
	var replicas *int32
	if !w.Scaled() {
		replicas = ptr(int32(1))
		if w.Replicas != nil {
			replicas = w.Replicas
		}
	}
	if w.Worker == nil {
		pod, err := b.servingPod(w.Template, w, k.role)
		if err != nil {
			return err
		}
		sidecar := hasSidecar(pod)
		if sidecar {
			pod.ServiceAccountName = k.singleSA
			b.add(b.podRBAC(k.singleSA, b.names.workloadRole, b.names.workloadRoleBinding, k.component)...)
		}
		podMeta := b.podMeta(w, b.podLabels(k.component, k.role, true), false)
		d := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: b.propagated(b.meta(k.deployment, k.component), false),
			Spec: appsv1.DeploymentSpec{
				Replicas: replicas,
				Selector: &metav1.LabelSelector{MatchLabels: b.labels(k.component)},
				Template: corev1.PodTemplateSpec{ObjectMeta: podMeta, Spec: *pod},
				Strategy: deploymentStrategy(w.RolloutStrategy),
			},
		}
		b.add(d)
		if b.opts.NetworkPolicy {
			b.add(b.networkPolicy(k.deployment, k.component, k.component))
		}
		return nil
	}

	size := w.Parallelism.Size()
	if size == nil {
		return fmt.Errorf("%s.parallelism: a worker needs data parallelism (data and dataLocal) or pipeline parallelism (pipeline)", path)
	}
	workerPod, err := b.servingPod(w.Worker, w, k.role)
	if err != nil {
		return err
	}
	workerPod.ServiceAccountName = k.multiNodeSA
	lws := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: b.propagated(b.meta(k.lws, k.component), true),
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas:      replicas,
			StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
			RolloutStrategy: lwsv1.RolloutStrategy{
				Type: lwsv1.RollingUpdateStrategyType,
				RollingUpdateConfiguration: &lwsv1.RollingUpdateConfiguration{
					MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(0),
				},
			},
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				Size:          size,
				RestartPolicy: lwsv1.RecreateGroupOnPodRestart,
				WorkerTemplate: corev1.PodTemplateSpec{
					// Workers serve through the leader; without a leader they
					// are the serving pods themselves.
					ObjectMeta: b.podMeta(w, b.podLabels(k.worker, k.role, w.Template == nil), true),
					Spec:       *workerPod,
				},
			},
		},
	}
	rolling := lws.Spec.RolloutStrategy.RollingUpdateConfiguration
	lwsRollout(w.RolloutStrategy, &rolling.MaxUnavailable, &rolling.MaxSurge)
	sidecar := false
	if w.Template != nil {
		leaderPod, err := b.servingPod(w.Template, w, k.role)
		if err != nil {
			return err
		}
		leaderPod.ServiceAccountName = k.multiNodeSA
		sidecar = hasSidecar(leaderPod)
		lws.Spec.LeaderWorkerTemplate.LeaderTemplate = &corev1.PodTemplateSpec{
			ObjectMeta: b.podMeta(w, b.podLabels(k.leader, k.role, true), true),
			Spec:       *leaderPod,
		}
	}
	b.add(b.serviceAccount(k.multiNodeSA, k.component), lws)
	if b.opts.NetworkPolicy {
		b.add(b.networkPolicy(k.lws, k.component, k.leader, k.worker))
	}
	if sidecar {
		b.add(b.podRBAC(k.multiNodeSA, b.names.multiNodeRole, b.names.multiNodeRoleBinding, k.component)[1:]...)
	}
	return nil
}

// servingPod copies a pod template of workload w, whose pods have the
// llm-d role role, and adds the model storage, the LoRA adapters, the
// speculator (decode and single pods), KV cache offloading, tracing and the
// pool name the routing sidecar needs.
func (b *builder) servingPod(tmpl *corev1.PodSpec, w *v1alpha2.WorkloadSpec, role string) (*corev1.PodSpec, error) {
	pod := tmpl.DeepCopy()
	if err := b.addStorage(pod); err != nil {
		return nil, err
	}
	b.addLoRA(pod, b.lora)
	if role != "prefill" {
		if err := b.addSpeculator(pod); err != nil {
			return nil, err
		}
	}
	if err := b.addKVCache(pod, w, b.ownPod(tmpl == w.Worker, role)); err != nil {
		field := "spec.kvCacheOffloading"
		if role == "prefill" {
			field = "spec.prefill.kvCacheOffloading"
		}
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	b.addTrustRemoteCode(pod)
	b.addServerTracing(pod, role)
	writableParents(pod)
	for i := range pod.InitContainers {
		c := &pod.InitContainers[i]
		if c.Name == RoutingSidecar && !hasEnv(c, "INFERENCE_POOL_NAME") {
			c.Env = append(c.Env, corev1.EnvVar{Name: "INFERENCE_POOL_NAME", Value: b.names.pool})
		}
	}
	return pod, nil
}

func hasSidecar(pod *corev1.PodSpec) bool {
	for _, c := range pod.InitContainers {
		if c.Name == RoutingSidecar {
			return true
		}
	}
	return false
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// podLabels are the labels of a workload pod. Serving pods also carry the
// selector labels of the workload Service and the InferencePool.
func (b *builder) podLabels(component, role string, serving bool) map[string]string {
	l := b.labels(component)
	if serving {
		l[convention.LabelKServeComponent] = "workload"
		l[convention.LabelRole] = role
	}
	for k, v := range b.svc.Labels {
		if strings.HasPrefix(k, "kueue.x-k8s.io") {
			l[k] = v
		}
	}
	return l
}

// podMeta is the metadata of a workload's pod template: the workload's
// labels and annotations (spec.labels, spec.annotations), the service's
// propagated ones, and the labels odh-serving selects the pods by, which
// win.
func (b *builder) podMeta(w *v1alpha2.WorkloadSpec, labels map[string]string, lws bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Labels: maps.Clone(w.Labels), Annotations: maps.Clone(w.Annotations)}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	maps.Copy(m.Labels, labels)
	return b.propagated(m, lws)
}

// propagated adds the service's scheduling labels and annotations (kueue,
// multus, and LWS's own for LeaderWorkerSets) to a child's metadata.
func (b *builder) propagated(m metav1.ObjectMeta, lws bool) metav1.ObjectMeta {
	prefixes := []string{"k8s.v1.cni.cncf.io", "kueue.x-k8s.io"}
	if lws {
		prefixes = append(prefixes, "leaderworkerset.sigs.k8s.io")
	}
	for k, v := range b.svc.Annotations {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				if m.Annotations == nil {
					m.Annotations = map[string]string{}
				}
				m.Annotations[k] = v
			}
		}
	}
	for k, v := range b.svc.Labels {
		if strings.HasPrefix(k, "kueue.x-k8s.io") {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[k] = v
		}
	}
	return m
}

// workloadService fronts the serving pods of the main workload; with
// prefill it selects the decode pods only, which KServe did not.
func (b *builder) workloadService(role string) *corev1.Service {
	https := "https"
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.servingCert(b.meta(b.names.workloadService, ComponentWorkload), b.names.tlsSecret),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{
				Name: "https", Port: WorkloadPort, TargetPort: intstr.FromInt32(WorkloadPort),
				Protocol: corev1.ProtocolTCP, AppProtocol: &https,
			}},
			Selector: map[string]string{
				convention.LabelPartOf: convention.PartOf, convention.LabelName: b.svc.Name, convention.LabelKServeComponent: "workload", convention.LabelRole: role,
			},
		},
	}
}

func (b *builder) serviceAccount(name, component string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: b.meta(name, component),
	}
}

// podRBAC is a ServiceAccount with a Role and RoleBinding that let the
// routing sidecar read pods and InferencePools.
func (b *builder) podRBAC(sa, role, binding, component string) []Object {
	read := []string{"get", "list", "watch"}
	r := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: b.meta(role, component),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
			{APIGroups: []string{GroupPoolV1, GroupPoolV1alpha2}, Resources: []string{"inferencepools"}, Verbs: read},
		},
	}
	return []Object{b.serviceAccount(sa, component), r, b.roleBinding(binding, role, sa, component)}
}

func (b *builder) roleBinding(name, role, sa, component string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: b.meta(name, component),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: b.svc.Namespace}},
	}
}

// servingCert asks for a serving certificate in secret for a Service, when
// the certificate mode is one that is asked for by annotation.
func (b *builder) servingCert(m metav1.ObjectMeta, secret string) metav1.ObjectMeta {
	if b.opts.CertMode == convention.CertServiceCA {
		m.Annotations = map[string]string{AnnotationServingCert: secret}
	}
	return m
}

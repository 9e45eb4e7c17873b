package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func pod(name string, conds []corev1.PodCondition, containers ...corev1.ContainerStatus) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Conditions: conds, ContainerStatuses: containers}}
}

var (
	readyPod    = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReadyPod = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [main]"},
	}
)

// TestPodsVerdictCauses: each cause a pod can give, in the cluster's words.
func TestPodsVerdictCauses(t *testing.T) {
	base := notReady(ReasonProgressing, "Deployment d: Deployment does not have minimum availability.")
	for _, tc := range []struct {
		name       string
		pods       []corev1.Pod
		reason     string
		message    string
		unchanged  bool
		wantReason string
	}{
		{
			name: "unschedulable",
			pods: []corev1.Pod{pod("d-b", []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod."}}),
				pod("d-a", readyPod)},
			wantReason: "Unschedulable",
			message:    "Deployment d: 1 of 2 pods not Ready; pod d-b not scheduled: Unschedulable: 0/6 nodes are available: 6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.",
		},
		{
			name: "image pull",
			pods: []corev1.Pod{pod("d-a", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "x"`}}})},
			wantReason: "ImagePullBackOff",
			message:    `Deployment d: 1 of 1 pods not Ready; pod d-a container main waiting: ImagePullBackOff: Back-off pulling image "x"`,
		},
		{
			name: "crash loop",
			pods: []corev1.Pod{pod("d-a", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CrashLoopBackOff", Message: "back-off 2m40s restarting failed container=main pod=d-a_ns(uid)"}}})},
			wantReason: "CrashLoopBackOff",
			message:    "Deployment d: 1 of 1 pods not Ready; pod d-a container main waiting: CrashLoopBackOff: back-off 2m40s restarting failed container=main pod=d-a_ns(uid)",
		},
		{
			name:       "readiness probe",
			pods:       []corev1.Pod{pod("d-a", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})},
			wantReason: "ContainersNotReady",
			message:    "Deployment d: 1 of 1 pods not Ready; pod d-a container main running, readiness probe failing: ContainersNotReady: containers with unready status: [main]",
		},
		{
			name: "a pod being created comes after one with a cause",
			pods: []corev1.Pod{
				pod("d-b", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}),
				pod("d-a", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			},
			wantReason: "CrashLoopBackOff",
			message:    "Deployment d: 2 of 2 pods not Ready; pod d-b container main waiting: CrashLoopBackOff",
		},
		{
			name: "only pods being created",
			pods: []corev1.Pod{
				pod("d-b", notReadyPod),
				pod("d-a", notReadyPod, corev1.ContainerStatus{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}),
			},
			wantReason: "ContainersNotReady",
			message:    "Deployment d: 2 of 2 pods not Ready; pod d-a not ready: ContainersNotReady: containers with unready status: [main]",
		},
		{name: "every pod Ready", pods: []corev1.Pod{pod("d-a", readyPod)}, unchanged: true},
		{name: "no pod", unchanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podsVerdict(base, "Deployment", "d", tc.pods)
			if tc.unchanged {
				if got != base {
					t.Errorf("got %+v, want the workload's own verdict", got)
				}
				return
			}
			if got.ok || got.reason != tc.wantReason || got.message != tc.message {
				t.Errorf("got %+v\nwant reason %s, message\n%s", got, tc.wantReason, tc.message)
			}
		})
	}
}

// TestPodChangedIgnoresWhatTheStatusDoesNotShow: a pod update reconciles
// its service only when its readiness or cause changed.
func TestPodChangedIgnoresWhatTheStatusDoesNotShow(t *testing.T) {
	a := pod("d-a", notReadyPod)
	b := *a.DeepCopy()
	b.ResourceVersion = "2"
	b.Status.Conditions = append(b.Status.Conditions, corev1.PodCondition{Type: "Other", Status: corev1.ConditionTrue})
	if podChanged.UpdateFunc(updateEvent(&a, &b)) {
		t.Error("an update that changes no cause reconciled")
	}
	c := pod("d-a", readyPod)
	if !podChanged.UpdateFunc(updateEvent(&a, &c)) {
		t.Error("a pod turning Ready did not reconcile")
	}
}

func updateEvent(o, n *corev1.Pod) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: o, ObjectNew: n}
}

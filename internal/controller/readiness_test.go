package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// The LeaderWorkerSet operator (v0.8.0) does not rewrite its Available
// condition when a rollout starts: it only turns its status False, keeping
// the reason AllGroupsReady and the message "All replicas are ready", and
// sets Progressing or UpdateInProgress True. The verdict must tell the
// user what is going on, not that all replicas are ready.
func TestLWSVerdictDuringARollout(t *testing.T) {
	l := &lwsv1.LeaderWorkerSet{ObjectMeta: metav1.ObjectMeta{Name: "m-kserve-mn", Generation: 2}}
	l.Status.Conditions = []metav1.Condition{
		{Type: string(lwsv1.LeaderWorkerSetAvailable), Status: metav1.ConditionFalse, Reason: "AllGroupsReady", Message: "All replicas are ready"},
		{Type: string(lwsv1.LeaderWorkerSetProgressing), Status: metav1.ConditionTrue, Reason: "GroupsProgressing", Message: "Replicas are progressing"},
		{Type: string(lwsv1.LeaderWorkerSetUpdateInProgress), Status: metav1.ConditionTrue, Reason: "GroupsUpdating", Message: "Rolling Upgrade is in progress"},
	}
	v := lwsVerdict(l)
	if v.ok || v.reason != "GroupsUpdating" || v.message != "LeaderWorkerSet m-kserve-mn: Rolling Upgrade is in progress" {
		t.Errorf("rolling: %+v, want not ok, GroupsUpdating, the operator's rollout message", v)
	}

	l.Status.Conditions[2].Status = metav1.ConditionFalse
	v = lwsVerdict(l)
	if v.ok || v.reason != "GroupsProgressing" || v.message != "LeaderWorkerSet m-kserve-mn: Replicas are progressing" {
		t.Errorf("progressing: %+v, want not ok, GroupsProgressing, the operator's message", v)
	}

	l.Status.Conditions[0].Status = metav1.ConditionTrue
	l.Status.Conditions[1].Status = metav1.ConditionFalse
	if v = lwsVerdict(l); !v.ok || v.reason != "AllGroupsReady" {
		t.Errorf("available: %+v, want ok, AllGroupsReady", v)
	}
}

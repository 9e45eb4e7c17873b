package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine"
)

// A service is looked at again soon while its scheduler ConfigMap is
// missing, and every few minutes while it reads one; other services and
// other render errors are not requeued for it.
func TestSchedulerConfigRequeue(t *testing.T) {
	missing := fmt.Errorf("render LLMInferenceService a/b: %w", fmt.Errorf("spec.router.scheduler.config.ref: %w: x", engine.ErrConfigMapNotFound))
	for name, tc := range map[string]struct {
		plan *engine.Plan
		err  error
		want string
	}{
		"a missing ConfigMap":   {err: missing, want: "30s"},
		"another render error":  {err: errors.New("spec.model.uri: unknown scheme"), want: "0s"},
		"read from a ConfigMap": {plan: &engine.Plan{SchedulerConfigFrom: "a/b:epp"}, want: "5m0s"},
		"no ConfigMap":          {plan: &engine.Plan{}, want: "0s"},
	} {
		if got := schedulerConfigRequeue(tc.plan, tc.err).String(); got != tc.want {
			t.Errorf("%s: requeue after %s, want %s", name, got, tc.want)
		}
	}
}

package engine_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine"
)

// configMaps is a ConfigMapLookup over namespace/name → data that
// records what was asked for.
type configMaps struct {
	data  map[string]map[string]string
	err   error
	mu    sync.Mutex
	asked []string
}

func (c *configMaps) lookup(namespace, name string) (map[string]string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, namespace+"/"+name)
	d, ok := c.data[namespace+"/"+name]
	return d, ok, c.err
}

// schedulerArgs are the endpoint picker container's arguments.
func schedulerArgs(t *testing.T, res *engine.Result) []string {
	t.Helper()
	for i, o := range res.Objects {
		if res.Children[i].Role == engine.RoleScheduler {
			return o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
		}
	}
	t.Fatal("no endpoint picker Deployment")
	return nil
}

// TestSchedulerConfigRef: spec.router.scheduler.config.ref becomes the
// endpoint picker's --config-text, read where KServe reads it, and every
// way it can go wrong names the field and the ConfigMap.
func TestSchedulerConfigRef(t *testing.T) {
	// The ConfigMap's YAML reaches the endpoint picker as JSON, as an
	// inline configuration does.
	const text = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\n"
	const asJSON = `{"apiVersion":"inference.networking.x-k8s.io/v1alpha1","kind":"EndpointPickerConfig"}`
	ref := func(name, key string, optional bool) *v1alpha2.SchedulerConfigSpec {
		r := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
		if optional {
			r.Optional = ptr.To(true)
		}
		return &v1alpha2.SchedulerConfigSpec{Ref: r}
	}
	for name, tc := range map[string]struct {
		config   *v1alpha2.SchedulerConfigSpec
		data     map[string]map[string]string
		err      error
		from     string   // SchedulerConfigFrom; empty: the preset's configuration stays
		asked    []string // the lookups, in order
		wantErr  string
		notFound bool
	}{
		"in the service's namespace": {
			config: ref("epp-config", "epp", false), data: map[string]map[string]string{"team-a/epp-config": {"epp": text}},
			from: "team-a/epp-config:epp", asked: []string{"team-a/epp-config"},
		},
		"shared from the system namespace": {
			config: ref("config-scheduler-queue", "profile", false), data: map[string]map[string]string{"opendatahub/config-scheduler-queue": {"profile": text}},
			from: "opendatahub/config-scheduler-queue:profile", asked: []string{"team-a/config-scheduler-queue", "opendatahub/config-scheduler-queue"},
		},
		"the service's own wins over the shared one": {
			config: ref("config-scheduler-queue", "epp", false),
			data: map[string]map[string]string{
				"team-a/config-scheduler-queue": {"epp": text}, "opendatahub/config-scheduler-queue": {"epp": "kind: Other\n"},
			},
			from: "team-a/config-scheduler-queue:epp", asked: []string{"team-a/config-scheduler-queue"},
		},
		"another name is not looked for in the system namespace": {
			config: ref("epp-config", "epp", false), data: map[string]map[string]string{"opendatahub/epp-config": {"epp": text}},
			asked: []string{"team-a/epp-config"}, notFound: true,
			wantErr: "render LLMInferenceService team-a/llama-pd: spec.router.scheduler.config.ref: ConfigMap not found: epp-config in namespace team-a",
		},
		"missing everywhere": {
			config: ref("config-scheduler-queue", "epp", false), asked: []string{"team-a/config-scheduler-queue", "opendatahub/config-scheduler-queue"},
			notFound: true,
			wantErr:  "spec.router.scheduler.config.ref: ConfigMap not found: config-scheduler-queue in namespace team-a or opendatahub",
		},
		"optional and missing": {
			config: ref("epp-config", "epp", true), asked: []string{"team-a/epp-config"},
		},
		"optional and without the key": {
			config: ref("epp-config", "epp", true), data: map[string]map[string]string{"team-a/epp-config": {"other": text}},
			asked: []string{"team-a/epp-config"},
		},
		"without the key": {
			config: ref("epp-config", "epp", false), data: map[string]map[string]string{"team-a/epp-config": {"other": text}},
			asked: []string{"team-a/epp-config"}, wantErr: `spec.router.scheduler.config.ref: ConfigMap team-a/epp-config has no key "epp"`,
		},
		"not YAML": {
			config: ref("epp-config", "epp", false), data: map[string]map[string]string{"team-a/epp-config": {"epp": "kind: [\n"}},
			asked: []string{"team-a/epp-config"}, wantErr: `spec.router.scheduler.config.ref: key "epp" of ConfigMap team-a/epp-config is not YAML`,
		},
		"an empty key": {
			config: ref("epp-config", "epp", false), data: map[string]map[string]string{"team-a/epp-config": {"epp": "\n"}},
			asked: []string{"team-a/epp-config"}, wantErr: `spec.router.scheduler.config.ref: key "epp" of ConfigMap team-a/epp-config is empty`,
		},
		"the lookup fails": {
			config: ref("epp-config", "epp", false), err: errors.New("connection refused"),
			asked: []string{"team-a/epp-config"}, wantErr: "spec.router.scheduler.config.ref: read ConfigMap team-a/epp-config: connection refused",
		},
		"inline wins, nothing is read": {
			config: &v1alpha2.SchedulerConfigSpec{
				Inline: &runtime.RawExtension{Raw: []byte(asJSON)}, Ref: ref("epp-config", "epp", false).Ref,
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			svc, catalog, opts := loadCase(t, "prefill-decode")
			svc = svc.DeepCopy()
			svc.Spec.Router.Scheduler.Config = tc.config
			cms := &configMaps{data: tc.data, err: tc.err}
			opts.ConfigMaps = cms.lookup
			res, err := engine.Render(t.Context(), svc, catalog, opts)
			if !slices.Equal(cms.asked, tc.asked) {
				t.Errorf("looked up %q, want %q", cms.asked, tc.asked)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if errors.Is(err, engine.ErrConfigMapNotFound) != tc.notFound {
					t.Errorf("errors.Is(err, ErrConfigMapNotFound) = %v, want %v", !tc.notFound, tc.notFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.SchedulerConfigFrom != tc.from {
				t.Errorf("SchedulerConfigFrom = %q, want %q", res.SchedulerConfigFrom, tc.from)
			}
			if c := res.Spec.Router.Scheduler.Config; c.Ref != nil && tc.config.Inline == nil {
				t.Errorf("the merged spec keeps config.ref %+v; it is resolved or dropped", c.Ref)
			}
			args := strings.Join(schedulerArgs(t, res), "\n")
			hasText := strings.Contains(args, "--config-text\n"+asJSON)
			if want := tc.from != "" || tc.config.Inline != nil; hasText != want {
				t.Errorf("the endpoint picker runs the configuration: %v, want %v; args:\n%s", hasText, want, args)
			}
		})
	}
}

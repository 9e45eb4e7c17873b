package presets_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/engine"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/engine/preset"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/presets/presetstest"
)

// TestEveryPresetFolder walks every preset folder: it must have a README,
// a preset and a sample service; the sample must render through the preset,
// and the output must match expected.yaml.
func TestEveryPresetFolder(t *testing.T) {
	dirs := golden.Glob(t, "*/preset.yaml")
	catalog, images := presetstest.Catalog(t, nil), presetstest.Images(t)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(dir, func(t *testing.T) {
			for _, f := range []string{"README.md", "sample.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("every preset folder needs a %s: %v", f, err)
				}
			}
			in, err := manifest.DecodeFile(filepath.Join(dir, "sample.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Services) != 1 {
				t.Fatalf("sample.yaml must hold one LLMInferenceService, has %d", len(in.Services))
			}
			res, err := engine.Render(t.Context(), in.Services[0].Service, catalog, engine.Options{Images: images})
			if err != nil {
				t.Fatal(err)
			}
			id := engine.DefaultSystemNamespace + "/" + preset.DefaultPrefix + dir
			if !slices.ContainsFunc(res.Explanation.Layers, func(l engine.Layer) bool { return strings.HasPrefix(l.Name, id+" ") }) {
				t.Errorf("the sample does not render through %s; its layers: %v", id, res.Explanation.Layers)
			}
			out, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join(dir, "expected.yaml"), out)
		})
	}
}

// TestImagesAreAllUsed keeps images.yaml free of keys no preset names (the
// engine names the storage initializer's).
func TestImagesAreAllUsed(t *testing.T) {
	images := presetstest.Images(t)
	files, _ := filepath.Glob("*/preset.yaml")
	var all strings.Builder
	for _, f := range files {
		data := golden.Read(t, f)
		all.Write(data)
	}
	for key := range images {
		if key == engine.StorageInitializerImageKey {
			continue
		}
		if !strings.Contains(all.String(), ".GlobalConfig.Images."+key+" ") {
			t.Errorf("images.yaml key %q is used by no preset", key)
		}
	}
}

// TestEPPPoolGroupFollowsPhase renders every preset sample and every
// example that starts an endpoint picker in every migration phase: the
// endpoint picker's --pool-group and --pool-name must name a pool that is
// rendered in that phase, or it finds no pool to serve.
func TestEPPPoolGroupFollowsPhase(t *testing.T) {
	samples := golden.Glob(t, "*/sample.yaml")
	examples, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gpu, err := filepath.Glob("../examples/gpu/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	catalog, images := presetstest.Catalog(t, nil), presetstest.Images(t)
	for _, phase := range convention.Phases {
		epps := 0
		for _, file := range slices.Concat(samples, examples, gpu) {
			in, err := manifest.DecodeFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range in.Services {
				name := fmt.Sprintf("%s/%s/%s", phase, file, s.Service.Name)
				res, err := engine.Render(t.Context(), s.Service, catalog, engine.Options{Images: images, Phase: phase})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				pools := map[string]bool{} // "group/name" of each rendered pool
				for _, o := range res.Objects {
					gvk := o.GetObjectKind().GroupVersionKind()
					if gvk.Kind == "InferencePool" {
						pools[gvk.Group+"/"+o.GetName()] = true
					}
				}
				for i, o := range res.Objects {
					d, ok := o.(*appsv1.Deployment)
					if !ok || res.Children[i].Role != engine.RoleScheduler {
						continue
					}
					epps++
					main := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == build.MainContainer })
					if main < 0 {
						t.Fatalf("%s: the endpoint picker %s has no container %s", name, d.Name, build.MainContainer)
					}
					args := d.Spec.Template.Spec.Containers[main].Args
					group, poolName := argValue(args, "--pool-group"), argValue(args, "--pool-name")
					if !pools[group+"/"+poolName] {
						t.Errorf("%s: the endpoint picker %s watches --pool-group %s --pool-name %s, but the %s phase renders only the pools %v",
							name, d.Name, group, poolName, phase, slices.Sorted(maps.Keys(pools)))
					}
				}
			}
		}
		if epps == 0 {
			t.Errorf("phase %s: no sample or example starts an endpoint picker; the test checks nothing", phase)
		}
	}
}

// argValue is the value of flag in args ("flag value" or "flag=value"), or
// "" when args do not set it.
func argValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// TestEPPRoleMatchesGIECRDs checks the endpoint picker's Role against the
// GIE CRDs odh-serving installs (api/crds/thirdparty/gie, GIE v1.3.1): it
// grants read on every kind GIE's endpoint picker of that release watches
// (pkg/epp/controller: pods, the InferencePool of its --pool-group, either
// group, InferenceObjective and InferenceModelRewrite), and every GIE
// resource it names is one of the installed CRDs.
func TestEPPRoleMatchesGIECRDs(t *testing.T) {
	gie, err := crds.Load(crds.GIE)
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{} // group/plural
	for _, crd := range gie {
		installed[crd.Spec.Group+"/"+crd.Spec.Names.Plural] = true
	}
	in, err := manifest.DecodeFile("config-llm-scheduler/sample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Render(t.Context(), in.Services[0].Service, presetstest.Catalog(t, nil), engine.Options{Images: presetstest.Images(t)})
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	for _, o := range res.Objects {
		if r, ok := o.(*rbacv1.Role); ok && strings.HasSuffix(r.Name, "-epp-role") {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no endpoint picker Role (*-epp-role) rendered")
	}
	granted := map[string]bool{} // group/plural readable
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Verbs, "get") || !slices.Contains(rule.Verbs, "list") || !slices.Contains(rule.Verbs, "watch") {
			continue
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				granted[g+"/"+r] = true
				if (g == build.GroupPoolV1 || g == build.GroupPoolV1alpha2) && !installed[g+"/"+r] {
					t.Errorf("Role %s grants %s/%s, a kind odh-serving never installs", role.Name, g, r)
				}
			}
		}
	}
	for _, watched := range []string{
		"/pods",
		build.GroupPoolV1 + "/inferencepools", build.GroupPoolV1alpha2 + "/inferencepools",
		build.GroupPoolV1alpha2 + "/inferenceobjectives", build.GroupPoolV1alpha2 + "/inferencemodelrewrites",
	} {
		if !granted[watched] {
			t.Errorf("Role %s does not let the endpoint picker get, list and watch %s", role.Name, watched)
		}
		if g, _, _ := strings.Cut(watched, "/"); g != "" && !installed[watched] {
			t.Errorf("the endpoint picker watches %s, but odh-serving does not install its CRD", watched)
		}
	}
}

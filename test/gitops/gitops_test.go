package gitops_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

const page = "../../docs/gitops.md"

// The fields of Argo CD's Application (argoproj.io/v1alpha1) and
// ConfigManagementPlugin that the page uses, with Argo CD's JSON names;
// strict decoding fails on any other field, such as a misspelt one.
type application struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Annotations map[string]string `json:"annotations"`
		Finalizers  []string          `json:"finalizers"`
	} `json:"metadata"`
	Spec struct {
		Project string `json:"project"`
		Source  struct {
			RepoURL        string `json:"repoURL"`
			TargetRevision string `json:"targetRevision"`
			Path           string `json:"path"`
			Helm           *struct {
				ReleaseName  string         `json:"releaseName"`
				ValuesObject map[string]any `json:"valuesObject"`
			} `json:"helm"`
			Plugin *struct {
				Name string `json:"name"`
				Env  []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"env"`
			} `json:"plugin"`
		} `json:"source"`
		Destination struct {
			Server    string `json:"server"`
			Namespace string `json:"namespace"`
		} `json:"destination"`
		SyncPolicy struct {
			Automated *struct {
				Prune    bool `json:"prune"`
				SelfHeal bool `json:"selfHeal"`
			} `json:"automated"`
			SyncOptions []string `json:"syncOptions"`
		} `json:"syncPolicy"`
		IgnoreDifferences []ignoreRule `json:"ignoreDifferences"`
	} `json:"spec"`
}

type ignoreRule struct {
	Group                 string   `json:"group"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name"`
	JQPathExpressions     []string `json:"jqPathExpressions"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers"`
}

type command struct {
	Command []string `json:"command"`
	Args    []string `json:"args"`
}

type cmp struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version  string   `json:"version"`
		Init     *command `json:"init"`
		Generate command  `json:"generate"`
	} `json:"spec"`
}

// documented is the page's YAML, by what each block is.
type documented struct {
	apps    map[string]*application // by name; the static one under "static"
	plugin  *cmp
	sidecar []corev1.Container
}

func readPage(t *testing.T) *documented {
	t.Helper()
	data := golden.Read(t, page)
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllSubmatch(data, -1)
	d := &documented{apps: map[string]*application{}}
	for i, b := range blocks {
		block := b[1]
		var head struct {
			Kind       string `json:"kind"`
			Containers []any  `json:"containers"`
		}
		if err := yaml.Unmarshal(block, &head); err != nil {
			t.Fatalf("block %d: %v", i+1, err)
		}
		switch {
		case head.Kind == "Application":
			app := &application{}
			if err := yaml.UnmarshalStrict(block, app); err != nil {
				t.Fatalf("Application block %d: %v", i+1, err)
			}
			key := app.Metadata.Name
			if app.Spec.Source.Plugin != nil {
				key = "static"
			}
			d.apps[key] = app
		case head.Kind == "ConfigManagementPlugin":
			d.plugin = &cmp{}
			if err := yaml.UnmarshalStrict(block, d.plugin); err != nil {
				t.Fatalf("ConfigManagementPlugin block %d: %v", i+1, err)
			}
		case head.Containers != nil:
			var pod struct {
				Containers []corev1.Container `json:"containers"`
			}
			if err := yaml.UnmarshalStrict(block, &pod); err != nil {
				t.Fatalf("sidecar block %d: %v", i+1, err)
			}
			d.sidecar = pod.Containers
		default:
			t.Fatalf("block %d is neither an Application, a ConfigManagementPlugin nor containers", i+1)
		}
	}
	for _, name := range []string{"odh-serving-crds", "odh-serving", "static"} {
		if d.apps[name] == nil {
			t.Fatalf("the page has no %s Application", name)
		}
	}
	if d.plugin == nil || len(d.sidecar) != 1 {
		t.Fatal("the page lacks the plugin or its sidecar")
	}
	return d
}

func TestApplications(t *testing.T) {
	d := readPage(t)
	for name, app := range d.apps {
		if app.APIVersion != "argoproj.io/v1alpha1" || app.Spec.Destination.Namespace == "" || app.Spec.Source.Path == "" {
			t.Errorf("%s: apiVersion %q, destination %q, path %q", name, app.APIVersion, app.Spec.Destination.Namespace, app.Spec.Source.Path)
		}
		if _, err := os.Stat(filepath.Join("..", "..", app.Spec.Source.Path, "Chart.yaml")); err != nil {
			t.Errorf("%s: source path: %v", name, err)
		}
		if !slices.Contains(app.Spec.SyncPolicy.SyncOptions, "ServerSideApply=true") {
			t.Errorf("%s: no ServerSideApply=true", name)
		}
	}
	crds := d.apps["odh-serving-crds"]
	if crds.Metadata.Annotations["argocd.argoproj.io/sync-wave"] != "-1" {
		t.Error("the CRD Application must be in sync wave -1")
	}
	if len(crds.Metadata.Finalizers) > 0 || crds.Spec.SyncPolicy.Automated.Prune {
		t.Error("the CRD Application must never delete or prune CRDs")
	}
	for _, name := range []string{"odh-serving", "static"} {
		app := d.apps[name]
		if app.Metadata.Annotations["argocd.argoproj.io/sync-wave"] != "0" || !slices.Contains(app.Spec.SyncPolicy.SyncOptions, "SkipDryRunOnMissingResource=true") {
			t.Errorf("%s: wave %q, sync options %v", name, app.Metadata.Annotations["argocd.argoproj.io/sync-wave"], app.Spec.SyncPolicy.SyncOptions)
		}
	}
	static := d.apps["static"]
	if static.Spec.Source.Plugin.Name != d.plugin.Metadata.Name || d.plugin.Spec.Version != "" {
		t.Errorf("the Application names plugin %q; the plugin is %q (version %q)", static.Spec.Source.Plugin.Name, d.plugin.Metadata.Name, d.plugin.Spec.Version)
	}
	if c := d.sidecar[0]; len(c.Command) == 0 || c.Command[0] != "/var/run/argocd/argocd-cmp-server" || *c.SecurityContext.RunAsUser != 999 {
		t.Errorf("sidecar: command %v; Argo CD needs argocd-cmp-server as user 999", c.Command)
	}
	for _, rule := range static.Spec.IgnoreDifferences {
		if len(rule.ManagedFieldsManagers) > 0 {
			t.Errorf("ignore rule for %s uses managedFieldsManagers; see TestMigrationOwnsAllRules", rule.Kind)
		}
	}
}

// TestIgnoreRulesMatchRenderedObjects renders what each Application
// renders and checks that every ignore rule names objects in it and that
// its jq paths lead to fields those objects have (up to the ignored one).
func TestIgnoreRulesMatchRenderedObjects(t *testing.T) {
	d := readPage(t)
	tools := toolsPath(t)
	for name, app := range d.apps {
		t.Run(name, func(t *testing.T) {
			var out []byte
			if app.Spec.Source.Plugin != nil {
				out = generate(t, d.plugin, tools, pluginEnv(app), "")
			} else {
				out = helmTemplate(t, app)
			}
			objs := objects(t, out)
			for _, rule := range app.Spec.IgnoreDifferences {
				matched := 0
				for _, o := range objs {
					if o.GroupVersionKind().Group != rule.Group || o.GetKind() != rule.Kind || (rule.Name != "" && o.GetName() != rule.Name) {
						continue
					}
					matched++
					for _, expr := range rule.JQPathExpressions {
						if !leadsSomewhere(o.Object, expr) {
							t.Errorf("%s %s: %s leads to no field", o.GetKind(), o.GetName(), expr)
						}
					}
				}
				if matched == 0 {
					t.Errorf("ignore rule %s/%s %s matches nothing the Application renders", rule.Group, rule.Kind, rule.Name)
				}
			}
		})
	}
}

// TestPluginGenerate runs the plugin's generate script as the repo server
// would, in the chart's folder with Argo CD's variables: static mode
// expands the services, an overlay applies, and a failing helm fails the
// script with nothing on stdout.
func TestPluginGenerate(t *testing.T) {
	d := readPage(t)
	tools := toolsPath(t)
	env := pluginEnv(d.apps["static"])
	out := objects(t, generate(t, d.plugin, tools, env, ""))
	kinds := map[string]int{}
	for _, o := range out {
		kinds[o.GetKind()]++
		if o.GetKind() == "HTTPRoute" && o.GetAnnotations()[convention.AnnotationWeightsManagedBy] != "controller" {
			t.Errorf("route %s lacks %s", o.GetName(), convention.AnnotationWeightsManagedBy)
		}
	}
	if kinds["LLMInferenceService"] != 1 || kinds["HTTPRoute"] != 1 || kinds["InferencePool"] != 2 || kinds["Deployment"] < 3 {
		t.Errorf("the static render lacks the service's children: %v", kinds)
	}

	withOverlay := generate(t, d.plugin, tools, append(env, "ARGOCD_ENV_OVERLAY=odh"), "")
	if !bytes.Contains(withOverlay, []byte("name: llmisvc-webhook-server-service")) {
		t.Error("ARGOCD_ENV_OVERLAY=odh did not apply the overlay")
	}

	broken := generate(t, d.plugin, tools, append(env, "ARGOCD_ENV_VALUES_FILE=does-not-exist.yaml"), "does-not-exist.yaml")
	if len(broken) != 0 {
		t.Errorf("a failing helm must leave stdout empty, got %d bytes", len(broken))
	}
}

// toolsPath returns a PATH with helm and a fresh odh-serving first.
func toolsPath(t *testing.T) string {
	t.Helper()
	helm := testenv.HelmFor(t, "helm", "").Path
	dir := t.TempDir()
	if err := testenv.BuildCommand(t.Context(), "odh-serving", filepath.Join(dir, "odh-serving")); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + filepath.Dir(helm) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// pluginEnv is what the repo server gives the plugin for app.
func pluginEnv(app *application) []string {
	env := []string{
		"ARGOCD_APP_NAME=" + app.Metadata.Name, "ARGOCD_APP_NAMESPACE=" + app.Spec.Destination.Namespace,
		"KUBE_VERSION=1.34.4", "KUBE_API_VERSIONS=v1,apps/v1,gateway.networking.k8s.io/v1,serving.kserve.io/v1alpha2",
	}
	for _, e := range app.Spec.Source.Plugin.Env {
		env = append(env, "ARGOCD_ENV_"+e.Name+"="+e.Value)
	}
	return env
}

// generate runs the plugin's generate command in the Application's chart
// folder. wantErr, when set, must appear on stderr of a failing run.
func generate(t *testing.T, plugin *cmp, path string, env []string, wantErr string) []byte {
	t.Helper()
	args := append(slices.Clone(plugin.Spec.Generate.Command[1:]), plugin.Spec.Generate.Args...)
	cmd := exec.CommandContext(t.Context(), plugin.Spec.Generate.Command[0], args...)
	cmd.Dir = filepath.Join("..", "..", "charts", "odh-serving")
	cmd.Env = append([]string{"PATH=" + path, "HOME=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if wantErr != "" {
		if err == nil || !strings.Contains(stderr.String(), wantErr) {
			t.Errorf("generate: error %v, stderr %q; want a failure naming %q", err, stderr.String(), wantErr)
		}
		return stdout.Bytes()
	}
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

func helmTemplate(t *testing.T, app *application) []byte {
	t.Helper()
	values, err := yaml.Marshal(app.Spec.Source.Helm.ValuesObject)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, values, 0o600); err != nil {
		t.Fatal(err)
	}
	return []byte(testenv.HelmFor(t, "helm", "").Must(t, "template", app.Spec.Source.Helm.ReleaseName,
		filepath.Join("..", "..", app.Spec.Source.Path), "--namespace", app.Spec.Destination.Namespace, "--values", file))
}

func objects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	docs, err := manifest.Split("render", stream)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		out = append(out, d.Object)
	}
	return out
}

// leadsSomewhere follows the jq path subset the page uses (.field,
// ["key"], []?) up to its last step and reports whether it reaches a map
// at least once: the ignored field lives there, set or not.
func leadsSomewhere(obj map[string]any, expr string) bool {
	steps := regexp.MustCompile(`\.([A-Za-z]+)|\["([^"]+)"\]|(\[\]\??)`).FindAllStringSubmatch(expr, -1)
	nodes := []any{obj}
	for i, s := range steps {
		last := i == len(steps)-1
		var next []any
		for _, n := range nodes {
			switch {
			case s[3] != "":
				l, _ := n.([]any)
				next = append(next, l...)
			case last:
				if _, ok := n.(map[string]any); ok {
					return true
				}
			default:
				key := s[1] + s[2]
				if m, ok := n.(map[string]any); ok && m[key] != nil {
					next = append(next, m[key])
				}
			}
		}
		nodes = next
	}
	return false
}

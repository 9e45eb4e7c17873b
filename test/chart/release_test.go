package chart

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// previousRelease is the commit of the chart version before this one
// (0.1.0): TestUpgradeFromPreviousRelease packages its charts from git.
// After a release, set it to that release's commit.
const previousRelease = "c2bc54fff023323dbc58ccbbad47ffc41ddd50af"

// archives returns the packaged charts of this version: from
// $ODH_SERVING_DIST (`make package` wrote them), else packaged into dir.
func archives(dir string) (chart, crds string, err error) {
	data, err := os.ReadFile("../../VERSION")
	if err != nil {
		return "", "", err
	}
	version := strings.TrimSpace(string(data))
	dist := os.Getenv("ODH_SERVING_DIST")
	if dist == "" {
		dist = filepath.Join(dir, "dist")
		if err := helmPackage(dist, chartDir, crdsChartDir); err != nil {
			return "", "", err
		}
	}
	chart = filepath.Join(dist, "odh-serving-"+version+".tgz")
	crds = filepath.Join(dist, "odh-serving-crds-"+version+".tgz")
	for _, f := range []string{chart, crds} {
		if _, err := os.Stat(f); err != nil {
			return "", "", fmt.Errorf("packaged chart of version %s (run `make package`): %w", version, err)
		}
	}
	return chart, crds, nil
}

func helmPackage(dest string, charts ...string) error {
	_, err := helm.Run(context.Background(), append([]string{"package", "--destination", dest}, charts...)...)
	return err
}

// builtImage is the controller image `make image` built, as the archive's
// index.json names it.
type builtImage struct {
	// Repository and Tag come from io.containerd.image.name.
	Repository, Tag string
	// Digest is the multi-arch index's.
	Digest string
}

// imageFromArchive reads index.json of the OCI image-layout archive named by
// $ODH_SERVING_IMAGE_ARCHIVE (`make test` builds it with `make image`).
func imageFromArchive(t *testing.T) builtImage {
	t.Helper()
	path := os.Getenv("ODH_SERVING_IMAGE_ARCHIVE")
	if path == "" {
		t.Fatal("ODH_SERVING_IMAGE_ARCHIVE is not set: run the tests with `make test`, which builds the image with `make image`")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s: no index.json", path)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if strings.TrimPrefix(h.Name, "./") != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			t.Fatalf("%s: index.json: %v", path, err)
		}
		if len(index.Manifests) != 1 {
			t.Fatalf("%s: index.json has %d manifests, want the one multi-arch index", path, len(index.Manifests))
		}
		name := index.Manifests[0].Annotations["io.containerd.image.name"]
		colon := strings.LastIndex(name, ":")
		if colon < strings.LastIndex(name, "/") || colon < 0 {
			t.Fatalf("%s: io.containerd.image.name %q has no tag", path, name)
		}
		return builtImage{Repository: name[:colon], Tag: name[colon+1:], Digest: index.Manifests[0].Digest}
	}
}

// controllerImage is the image of the controller Deployment in namespace.
func controllerImage(t *testing.T, namespace string) string {
	t.Helper()
	deploy := mustExist(t, gvkDeployment, namespace, "odh-serving-controller")
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("the controller Deployment has no containers")
	}
	image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	return image
}

// TestInstallFromArchive installs the packaged odh-serving chart, as a user
// does, and checks that its controller runs exactly the image `make image`
// built: by tag by default, by digest when controller.image.digest pins it.
func TestInstallFromArchive(t *testing.T) {
	const ns = "odh-archive"
	testenv.EnsureNamespace(t, cp.Client, ns)
	built := imageFromArchive(t)
	if v := projectVersion(t); built.Tag != v {
		t.Errorf("the image archive's tag is %s, want the VERSION %s", built.Tag, v)
	}
	install := append([]string{"odh-serving", chartArchive, "-n", ns}, webhookArgs()...)
	uninstallOnFailure(t, ns)

	byTag := built.Repository + ":" + built.Tag
	notes := helm.Must(t, append([]string{"install"}, install...)...)
	if !strings.Contains(notes, "Image: "+byTag+"\n") {
		t.Errorf("NOTES do not name the image %s:\n%s", byTag, notes)
	}
	if got := controllerImage(t, ns); got != byTag {
		t.Errorf("the controller runs %s, want the image make image built: %s", got, byTag)
	}
	var releases []struct {
		Chart      string `json:"chart"`
		AppVersion string `json:"app_version"`
	}
	if err := json.Unmarshal([]byte(helm.Must(t, "list", "-n", ns, "-o", "json")), &releases); err != nil {
		t.Fatal(err)
	}
	if len(releases) != 1 || releases[0].Chart != "odh-serving-"+built.Tag || releases[0].AppVersion != built.Tag {
		t.Errorf("helm list: %+v, want chart odh-serving-%s, app version %s", releases, built.Tag, built.Tag)
	}

	helm.Must(t, append([]string{"upgrade"}, append(install, "--set", "controller.image.digest="+built.Digest)...)...)
	if got, want := controllerImage(t, ns), built.Repository+"@"+built.Digest; got != want {
		t.Errorf("pinned by digest, the controller runs %s, want %s", got, want)
	}
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}

// previousArchives packages the charts of previousRelease from git.
func previousArchives(t *testing.T) (chart, crds string) {
	t.Helper()
	dir := t.TempDir()
	tarball := filepath.Join(dir, "previous.tar")
	archive := exec.Command("git", "archive", "--output", tarball, previousRelease, "charts/odh-serving", "charts/odh-serving-crds")
	archive.Dir = "../.."
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s (the previous release's charts; a shallow clone lacks it: fetch the history): %v\n%s", previousRelease, err, out)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("unpack %s: %v\n%s", tarball, err, out)
	}
	dist := filepath.Join(dir, "dist")
	if err := helmPackage(dist, filepath.Join(dir, "charts/odh-serving"), filepath.Join(dir, "charts/odh-serving-crds")); err != nil {
		t.Fatal(err)
	}
	return onlyFile(t, filepath.Join(dist, "odh-serving-[0-9]*.tgz")), onlyFile(t, filepath.Join(dist, "odh-serving-crds-*.tgz"))
}

func onlyFile(t *testing.T, pattern string) string {
	t.Helper()
	matches, err := filepath.Glob(pattern)
	if err != nil || len(matches) != 1 {
		t.Fatalf("%s: %v %v, want one file", pattern, matches, err)
	}
	return matches[0]
}

// customResources maps every LLMInferenceService and
// LLMInferenceServiceConfig in the cluster, as kind namespace/name, to its
// UID.
func customResources(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvk := range []schema.GroupVersionKind{gvkService, gvkPreset} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := cp.Client.List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[gvk.Kind+" "+o.GetNamespace()+"/"+o.GetName()] = string(o.GetUID())
		}
	}
	return out
}

// TestUpgradeFromPreviousRelease installs both charts of the previous
// release from their archives, adds a user's own service and preset, then
// upgrades both releases to this version's archives: every custom resource,
// the release's and the user's, is the same object afterwards (same UID),
// and the controller runs this version's image.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	const ns = "odh-upgrade"
	testenv.EnsureNamespace(t, cp.Client, ns)
	testenv.EnsureNamespace(t, cp.Client, "team-a")
	prevChart, prevCRDs := previousArchives(t)
	crdsUpgrade := func(archive string) []string {
		return append([]string{"upgrade", crdsRelease, archive, "-n", crdsNamespace}, webhookArgs()...)
	}
	// Leave the CRDs of this version for the other tests, whatever happens.
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = helm.Run(t.Context(), crdsUpgrade(crdsArchive)...)
		}
	})
	uninstallOnFailure(t, ns)

	helm.Must(t, crdsUpgrade(prevCRDs)...)
	release := func(verb, archive string) []string {
		return append([]string{verb, "odh-serving", archive, "-n", ns, "-f", ciValues(t, chartDir)["services"]}, webhookArgs()...)
	}
	helm.Must(t, release("install", prevChart)...)
	userService(t, ns, "users-own")
	userPreset := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "team-h100", "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"nodeSelector": map[string]any{"gpu": "h100"}}},
	}}
	userPreset.SetGroupVersionKind(gvkPreset)
	if err := cp.Client.Create(t.Context(), userPreset); err != nil {
		t.Fatalf("create the user's preset: %v", err)
	}
	deleteAtEnd(t, gvkPreset, ns, "team-h100")
	before := customResources(t)
	if len(before) < 18 { // 14 shipped presets, 2 services from values, the user's service and preset
		t.Fatalf("%d custom resources before the upgrade, want at least 18: %v", len(before), before)
	}

	helm.Must(t, crdsUpgrade(crdsArchive)...)
	helm.Must(t, release("upgrade", chartArchive)...)
	after := customResources(t)
	for key, uid := range before {
		if after[key] != uid {
			t.Errorf("%s: UID %s before the upgrade, %q after", key, uid, after[key])
		}
	}
	for _, name := range []string{"llminferenceservices.serving.kserve.io", "llminferenceserviceconfigs.serving.kserve.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cp.Client.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s after the upgrade: %v", name, err)
		}
	}
	built := imageFromArchive(t)
	if got, want := controllerImage(t, ns), built.Repository+":"+built.Tag; got != want {
		t.Errorf("after the upgrade the controller runs %s, want %s", got, want)
	}
	helm.Must(t, "uninstall", "odh-serving", "-n", ns)
}

package imagebuild

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// buildHello builds testdata/hello as the image into a fresh directory.
func buildHello(t *testing.T) *Result {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(t.Context(), Options{
		ModuleDir:  root,
		Package:    "./internal/imagebuild/testdata/hello",
		OutDir:     filepath.Join(dir, "out"),
		Repository: "example.com/odh-serving",
		Version:    "1.2.3",
		Commit:     "0123456789abcdef0123456789abcdef01234567",
		Created:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Platforms:  []v1.Platform{{OS: "linux", Architecture: "amd64"}},
		Log:        io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The same sources, version and source date give the same digests and the
// same archive and SBOM bytes, whatever the directory or the clock.
func TestBuildIsDeterministic(t *testing.T) {
	a, b := buildHello(t), buildHello(t)
	if a.IndexDigest != b.IndexDigest {
		t.Errorf("index digests differ: %s and %s", a.IndexDigest, b.IndexDigest)
	}
	if a.Images[0].Digest != b.Images[0].Digest {
		t.Errorf("image digests differ: %s and %s", a.Images[0].Digest, b.Images[0].Digest)
	}
	for _, pair := range [][2]string{{a.Archive, b.Archive}, {a.SBOM, b.SBOM}} {
		x, y := golden.Read(t, pair[0]), golden.Read(t, pair[1])
		if string(x) != string(y) {
			t.Errorf("%s and %s differ", pair[0], pair[1])
		}
	}
}

// The archive is an OCI layout whose index.json names the image for
// containerd and carries nothing but the source date.
func TestArchiveNamesTheImage(t *testing.T) {
	res := buildHello(t)
	f, err := os.Open(res.Archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	names := map[string]bool{}
	var index v1.IndexManifest
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
		if !h.ModTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("%s: time %s, want the source date", h.Name, h.ModTime)
		}
		if h.Name == "index.json" {
			if err := json.NewDecoder(tr).Decode(&index); err != nil {
				t.Fatalf("index.json: %v", err)
			}
		}
	}
	for _, want := range []string{"oci-layout", "index.json", "blobs/sha256/" + res.IndexDigest.Hex} {
		if !names[want] {
			t.Errorf("archive has no %s; has %v", want, names)
		}
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	got := index.Manifests[0]
	if got.Digest != res.IndexDigest {
		t.Errorf("index.json points at %s, want the index %s", got.Digest, res.IndexDigest)
	}
	for k, want := range map[string]string{AnnotationRefName: "1.2.3", AnnotationContainerdName: "example.com/odh-serving:1.2.3"} {
		if got.Annotations[k] != want {
			t.Errorf("index.json annotation %s = %q, want %q", k, got.Annotations[k], want)
		}
	}
}

// The SBOM is SPDX 2.3 and lists the main module, the standard library and
// the binary's dependency with Go purls.
func TestSBOMListsTheBuildInfo(t *testing.T) {
	res := buildHello(t)
	var doc spdxDocument
	if err := json.Unmarshal(golden.Read(t, res.SBOM), &doc); err != nil {
		t.Fatalf("%s: %v", res.SBOM, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-01-02T03:04:05Z" {
		t.Errorf("spdxVersion %q created %q", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	purls := map[string]bool{}
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		if ids[p.SPDXID] {
			t.Errorf("SPDXID %s twice", p.SPDXID)
		}
		ids[p.SPDXID] = true
		for _, r := range p.ExternalRefs {
			purls[r.ReferenceLocator] = true
		}
	}
	for _, want := range []string{
		"pkg:golang/github.com/opendatahub-io/odh-serving@v1.2.3",
		"pkg:golang/github.com/spf13/pflag@" + moduleVersion(t, "github.com/spf13/pflag"),
		"pkg:oci/odh-serving@sha256:" + res.IndexDigest.Hex + "?repository_url=example.com%2Fodh-serving&tag=1.2.3",
	} {
		if !purls[want] {
			t.Errorf("no package with purl %s in %v", want, purls)
		}
	}
	for _, r := range doc.Relationships {
		if (!ids[r.Element] && r.Element != doc.SPDXID) || !ids[r.Related] {
			t.Errorf("relationship %+v names an unknown element", r)
		}
	}
}

// The proxy's download location escapes capitals in the path and the
// version, as golang.org/x/mod/module says, and refuses what is not a
// module path.
func TestProxyZip(t *testing.T) {
	got, err := proxyZip("github.com/BurntSushi/toml", "v1.0.0-RC1")
	if want := "https://proxy.golang.org/github.com/!burnt!sushi/toml/@v/v1.0.0-!r!c1.zip"; err != nil || got != want {
		t.Errorf("proxyZip = %q, %v; want %q", got, err, want)
	}
	if got, err := proxyZip("example.com/a b", "v1.0.0"); err == nil {
		t.Errorf("proxyZip of a path with a space = %q, want an error", got)
	}
}

// moduleVersion is the version go.mod requires of a module.
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	for _, line := range strings.Split(string(golden.Read(t, "../../go.mod")), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	t.Fatalf("go.mod does not require %s", path)
	return ""
}

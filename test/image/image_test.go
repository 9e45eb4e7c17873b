package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/opendatahub-io/odh-serving/internal/imagebuild"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// ArchiveEnv names the archive to test; `make test` sets it to what `make
// image` just built.
const ArchiveEnv = "ODH_SERVING_IMAGE_ARCHIVE"

// maxCompressed is the budget for one platform's layers, compressed. The
// image is one static binary and a few small files; see docs/benchmarks.md.
const maxCompressed = 25 << 20

var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

func TestImage(t *testing.T) {
	version, commit := expected(t)
	idx := openIndex(t, archive(t, version, commit), version)

	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range platforms {
		t.Run(want.String(), func(t *testing.T) {
			var img v1.Image
			for _, d := range im.Manifests {
				if d.Platform != nil && d.Platform.Equals(want) {
					var err error
					if img, err = idx.Image(d.Digest); err != nil {
						t.Fatal(err)
					}
				}
			}
			if img == nil {
				t.Fatalf("the index has no %s image: %+v", want, im.Manifests)
			}
			checkConfig(t, img, want, version, commit)
			checkSize(t, img)
			fsys := unpack(t, img)
			checkRootFS(t, fsys, want)
			if want.OS == runtime.GOOS && want.Architecture == runtime.GOARCH {
				checkVersion(t, fsys[imagebuild.BinaryPath[1:]].data, version, commit)
			}
		})
	}
}

// expected is the version and commit the image must carry: the VERSION
// file and git HEAD, as `make image` passes them.
func expected(t *testing.T) (version, commit string) {
	t.Helper()
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatalf("the image's version comes from the VERSION file: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(b)), strings.TrimSpace(string(out))
}

// archive is the archive named by ArchiveEnv, or one built here.
func archive(t *testing.T, version, commit string) string {
	t.Helper()
	if p := os.Getenv(ArchiveEnv); p != "" {
		t.Logf("testing %s (%s)", p, ArchiveEnv)
		return p
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	created, err := imagebuild.SourceDate(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s is not set: building the image", ArchiveEnv)
	res, err := imagebuild.Build(t.Context(), imagebuild.Options{
		ModuleDir: root, OutDir: t.TempDir(), Repository: "quay.io/opendatahub/odh-serving",
		Version: version, Commit: commit, Created: created, Log: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Archive
}

// openIndex untars the archive and returns the image index its index.json
// names as the version.
func openIndex(t *testing.T, archive, version string) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, e := range readTar(t, f) {
		if e.dir {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, e.data, 0o644); err != nil {
			t.Fatalf("unpacking %s: %v", archive, err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s is not an OCI layout: %v", archive, err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want the one index", len(tm.Manifests))
	}
	d := tm.Manifests[0]
	if got := d.Annotations[imagebuild.AnnotationRefName]; got != version {
		t.Errorf("index.json ref.name = %q, want %q", got, version)
	}
	if got := d.Annotations[imagebuild.AnnotationContainerdName]; !strings.HasSuffix(got, "/odh-serving:"+version) {
		t.Errorf("index.json %s = %q, want <registry>/odh-serving:%s", imagebuild.AnnotationContainerdName, got, version)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatalf("index.json's %s is not an image index: %v", d.Digest, err)
	}
	return idx
}

func checkConfig(t *testing.T, img v1.Image, p v1.Platform, version, commit string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, want %s", cf.OS, cf.Architecture, p)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != imagebuild.BinaryPath {
		t.Errorf("entrypoint %q, want [%s]", got, imagebuild.BinaryPath)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/opendatahub-io/odh-serving",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
}

func checkSize(t *testing.T, img v1.Image) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		size += n
	}
	t.Logf("%d layers, %.1f MiB compressed", len(layers), float64(size)/(1<<20))
	if size > maxCompressed {
		t.Errorf("%d bytes compressed, over the budget of %d", size, maxCompressed)
	}
}

type file struct {
	dir  bool
	mode int64
	uid  int
	data []byte
}

// unpack flattens the image's layers into one root filesystem.
func unpack(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	return readTar(t, rc)
}

func readTar(t *testing.T, r io.Reader) map[string]file {
	t.Helper()
	files := map[string]file{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading a tar: %v", err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", h.Name, err)
		}
		files[name] = file{dir: h.Typeflag == tar.TypeDir, mode: h.Mode, uid: h.Uid, data: data}
	}
}

func checkRootFS(t *testing.T, fsys map[string]file, p v1.Platform) {
	t.Helper()
	if !strings.Contains(string(fsys["etc/passwd"].data), "nonroot:x:65532:65532:nonroot:/home/nonroot:") {
		t.Errorf("etc/passwd has no nonroot 65532:\n%s", fsys["etc/passwd"].data)
	}
	if !strings.Contains(string(fsys["etc/group"].data), "nonroot:x:65532:") {
		t.Errorf("etc/group has no nonroot 65532:\n%s", fsys["etc/group"].data)
	}
	if certs := fsys["etc/ssl/certs/ca-certificates.crt"].data; !bytes.Contains(certs, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("etc/ssl/certs/ca-certificates.crt holds no certificate (%d bytes)", len(certs))
	}
	if tmp := fsys["tmp"]; !tmp.dir || tmp.mode&0o1777 != 0o1777 {
		t.Errorf("tmp: dir %v mode %o, want a directory with mode 1777", tmp.dir, tmp.mode)
	}
	if home := fsys["home/nonroot"]; !home.dir || home.uid != 65532 {
		t.Errorf("home/nonroot: dir %v uid %d, want a directory owned by 65532", home.dir, home.uid)
	}
	bin, ok := fsys[imagebuild.BinaryPath[1:]]
	if !ok || bin.mode&0o111 == 0 {
		t.Fatalf("%s is missing or not executable", imagebuild.BinaryPath)
	}
	ef, err := elf.NewFile(bytes.NewReader(bin.data))
	if err != nil {
		t.Fatalf("%s is not an ELF binary: %v", imagebuild.BinaryPath, err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if ef.Machine != machine {
		t.Errorf("%s is built for %s, want %s", imagebuild.BinaryPath, ef.Machine, machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked; the image has no libc", imagebuild.BinaryPath)
		}
	}
}

// checkVersion runs the image's binary on the host: `odh-serving version`.
func checkVersion(t *testing.T, binary []byte, version, commit string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "odh-serving")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("odh-serving version: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	if got["version"] != version || got["commit"] != commit {
		t.Errorf("odh-serving version in the image printed\n%s\nwant version %s and commit %s", out, version, commit)
	}
	t.Logf("odh-serving version: %s", strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
}

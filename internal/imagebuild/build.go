package imagebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are inside the image, and who runs it. The Containerfile
// uses the same values.
const (
	BinaryPath = "/usr/local/bin/odh-serving"
	// CABundlePath is the CA bundle (CABundle), SSL_CERT_FILE.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	User         = "65532:65532"
	WorkingDir   = "/home/nonroot"
)

// The OCI annotation and label keys the image carries.
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelLicenses    = "org.opencontainers.image.licenses"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelCreated     = "org.opencontainers.image.created"
	// AnnotationRefName and AnnotationContainerdName name the index in the
	// layout's index.json: the tag, and the full reference that `ctr
	// import` and `kind load image-archive` give the image.
	AnnotationRefName        = "org.opencontainers.image.ref.name"
	AnnotationContainerdName = "io.containerd.image.name"
)

const versionPkg = "github.com/opendatahub-io/odh-serving/internal/version"

// Options says what to build and where to write it.
type Options struct {
	// ModuleDir is the root of the odh-serving module (where go.mod is).
	ModuleDir string
	// Package is the main package to build, relative to ModuleDir.
	// Default ./cmd/odh-serving.
	Package string
	// OutDir receives the binaries, the archive and the SBOM.
	OutDir string
	// Repository is the image repository, such as quay.io/opendatahub/odh-serving.
	Repository string
	// Version is the tag and the version label; Commit the revision label.
	Version string
	Commit  string
	// LDFlags are the go build -ldflags; default: -s -w and the -X flags that set
	// internal/version's version and commit from Version and Commit.
	LDFlags string
	// Created is the source date: every timestamp in the image. See SourceDate.
	Created time.Time
	// Platforms to build; default linux/amd64 and linux/arm64.
	Platforms []v1.Platform
	// Source, Licenses, Title and Description fill the OCI labels.
	Source      string
	Licenses    string
	Title       string
	Description string
	// Log receives go build's output and progress lines; default os.Stderr.
	Log io.Writer
}

// Result is what Build wrote.
type Result struct {
	Archive     string
	SBOM        string
	IndexDigest v1.Hash
	Images      []PlatformImage
	// CABundle is the CA bundle the images hold.
	CABundle *CABundle
}

// PlatformImage is one platform's image in the index.
type PlatformImage struct {
	Platform v1.Platform
	Digest   v1.Hash
	// CompressedSize is the sum of the compressed layers: what a pull of
	// this platform downloads, give or take the manifest and config.
	CompressedSize int64
	// Binary is the built binary on the host, under OutDir.
	Binary string
}

// ArchiveName is the file name of the OCI layout archive for a version.
func ArchiveName(version string) string { return "odh-serving-" + version + ".oci.tar" }

// SBOMName is the file name of the SPDX SBOM for a version.
func SBOMName(version string) string { return "odh-serving-" + version + ".spdx.json" }

func (o *Options) defaults() error {
	if o.ModuleDir == "" || o.OutDir == "" || o.Repository == "" || o.Version == "" || o.Commit == "" {
		return errors.New("imagebuild: ModuleDir, OutDir, Repository, Version and Commit are required")
	}
	if o.Created.IsZero() {
		return errors.New("imagebuild: Created (the source date) is required; see SourceDate")
	}
	o.Created = o.Created.UTC().Truncate(time.Second)
	if o.Package == "" {
		o.Package = "./cmd/odh-serving"
	}
	if o.LDFlags == "" {
		o.LDFlags = fmt.Sprintf("-s -w -X %s.version=%s -X %s.commit=%s", versionPkg, o.Version, versionPkg, o.Commit)
	}
	if len(o.Platforms) == 0 {
		o.Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	}
	if o.Source == "" {
		o.Source = "https://github.com/opendatahub-io/odh-serving"
	}
	if o.Licenses == "" {
		o.Licenses = "Apache-2.0"
	}
	if o.Title == "" {
		o.Title = "odh-serving"
	}
	if o.Description == "" {
		o.Description = "LLMInferenceService controller, renderer and Helm post-renderer"
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	return nil
}

// Build compiles the binary for every platform, builds the images and the
// index, and writes the archive and the SBOM under OutDir.
func Build(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating %s: %w", o.OutDir, err)
	}
	binaries, err := compileAll(ctx, o)
	if err != nil {
		return nil, err
	}
	ca, err := caBundle(o.ModuleDir)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(o, ca)
	if err != nil {
		return nil, err
	}

	res := &Result{
		Archive:  filepath.Join(o.OutDir, ArchiveName(o.Version)),
		SBOM:     filepath.Join(o.OutDir, SBOMName(o.Version)),
		CABundle: ca,
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range o.Platforms {
		img, size, err := platformImage(o, p, base, binaries[i])
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("digest of the %s image: %w", p, err)
		}
		res.Images = append(res.Images, PlatformImage{Platform: p, Digest: d, CompressedSize: size, Binary: binaries[i]})
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}},
		})
	}
	idx, ok := mutate.Annotations(idx, o.labels()).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotating the index: mutate.Annotations returned no index")
	}
	if res.IndexDigest, err = idx.Digest(); err != nil {
		return nil, fmt.Errorf("digest of the index: %w", err)
	}
	if err := writeArchive(o, idx, res.Archive); err != nil {
		return nil, err
	}
	if err := writeSBOM(o, res); err != nil {
		return nil, err
	}
	return res, nil
}

func (o *Options) labels() map[string]string {
	return map[string]string{
		LabelSource:      o.Source,
		LabelVersion:     o.Version,
		LabelRevision:    o.Commit,
		LabelLicenses:    o.Licenses,
		LabelTitle:       o.Title,
		LabelDescription: o.Description,
		LabelCreated:     o.Created.Format(time.RFC3339),
	}
}

// compileAll builds the binary for every platform at once: with a warm Go
// cache most of the time is linking, which runs on one core each. Each
// build's output reaches o.Log whole when the build ends, one build at a
// time: o.Log need not be safe for concurrent use (a bytes.Buffer is not),
// and the builds' lines do not interleave.
func compileAll(ctx context.Context, o Options) ([]string, error) {
	out := make([]string, len(o.Platforms))
	errs := make([]error, len(o.Platforms))
	var wg sync.WaitGroup
	var logMu sync.Mutex
	for i, p := range o.Platforms {
		out[i] = filepath.Join(o.OutDir, p.OS+"_"+p.Architecture, "odh-serving")
		wg.Add(1)
		go func() {
			defer wg.Done()
			var output bytes.Buffer
			errs[i] = compile(ctx, o, p, out[i], &output)
			logMu.Lock()
			defer logMu.Unlock()
			if _, err := o.Log.Write(output.Bytes()); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("writing the log of go build for %s: %w", p, err)
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// compile builds the binary for p at out, writing go build's output and a
// progress line to log.
func compile(ctx context.Context, o Options, p v1.Platform, out string, log io.Writer) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", o.LDFlags, "-o", out, o.Package) //nolint:gosec // go build of the package and flags make image names; no shell runs them
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", o.Package, p, err)
	}
	fmt.Fprintf(log, "built %s for %s in %.1fs\n", o.Package, p, time.Since(start).Seconds())
	return nil
}

// platformImage is the image for one platform: the base layer, the binary
// layer and the config, with every time set to the source date.
func platformImage(o Options, p v1.Platform, base v1.Layer, binary string) (v1.Image, int64, error) {
	bin, err := binaryLayer(o, binary)
	if err != nil {
		return nil, 0, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "odh-serving imagebuild: passwd, group, CA certificates, /tmp", Comment: "nonroot user " + User}},
		mutate.Addendum{Layer: bin, History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "odh-serving imagebuild: " + BinaryPath, Comment: "CGO_ENABLED=0 go build -trimpath " + o.Package}},
	)
	if err != nil {
		return nil, 0, fmt.Errorf("appending the layers of the %s image: %w", p, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, 0, fmt.Errorf("config of the %s image: %w", p, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: o.Created}
	cf.Author = o.Source
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		User:       User,
		WorkingDir: WorkingDir,
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CABundlePath},
		Labels:     o.labels(),
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, 0, fmt.Errorf("setting the config of the %s image: %w", p, err)
	}
	var size int64
	for _, l := range []v1.Layer{base, bin} {
		n, err := l.Size()
		if err != nil {
			return nil, 0, fmt.Errorf("size of a layer of the %s image: %w", p, err)
		}
		size += n
	}
	return img, size, nil
}

// SourceDate is the time stamped on everything in the image:
// SOURCE_DATE_EPOCH when set, else the committer time of HEAD in dir.
func SourceDate(ctx context.Context, dir string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	cmd := exec.CommandContext(ctx, "git", "log", "-1", "--format=%ct", "HEAD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time of HEAD in %s (set SOURCE_DATE_EPOCH outside git): %w", dir, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time of HEAD in %s: %q: %w", dir, out, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

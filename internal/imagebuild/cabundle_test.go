package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// baseFile returns a file of the base layer (the first) of the archive's
// first image.
func baseFile(t *testing.T, archive, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		data, err := io.ReadAll(tr)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err == nil {
			err = os.WriteFile(p, data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	lr := tar.NewReader(rc)
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the base layer has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			data, err := io.ReadAll(lr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

// fakeHostBundle writes a CA bundle that is not Mozilla's and points
// SSL_CERT_FILE and SSL_CERT_DIR at it, as a build host might.
func fakeHostBundle(t *testing.T, text string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "ca-certificates.crt")
	if err := os.WriteFile(file, []byte("-----BEGIN CERTIFICATE-----\n"+text+"\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", file)
	t.Setenv("SSL_CERT_DIR", dir)
}

// The image's CA bundle is the roots of golang.org/x/crypto/x509roots/fallback
// (those without a constraint, in order), whatever the build host's CA
// bundle holds: two builds under different host bundles give the same
// image, byte for byte.
func TestCABundleIsPinned(t *testing.T) {
	var want [][]byte
	for r := range bundle.Roots() {
		if r.Constraint == nil {
			want = append(want, r.Certificate)
		}
	}
	if len(want) < 100 {
		t.Fatalf("%d unconstrained roots in x509roots/fallback: too few to be Mozilla's", len(want))
	}
	fakeHostBundle(t, "aG9zdCBvbmU=")
	a := buildHello(t)
	fakeHostBundle(t, "aG9zdCB0d28=")
	b := buildHello(t)
	if a.Images[0].Digest != b.Images[0].Digest {
		t.Errorf("the image differs with the host's CA bundle: %s and %s", a.Images[0].Digest, b.Images[0].Digest)
	}
	data := baseFile(t, a.Archive, "etc/ssl/certs/ca-certificates.crt")
	var got [][]byte
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				t.Errorf("the CA bundle has %d bytes that are no PEM block", len(rest))
			}
			break
		}
		got = append(got, block.Bytes)
	}
	if len(got) != len(want) {
		t.Fatalf("the image's CA bundle holds %d certificates, want the %d of x509roots/fallback", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("certificate %d of the image's CA bundle is not x509roots/fallback's", i)
		}
	}
}

// The SBOM lists the CA bundle: its checksum, and the module and version
// it comes from.
func TestSBOMListsTheCABundle(t *testing.T) {
	res := buildHello(t)
	sum := sha256.Sum256(baseFile(t, res.Archive, "etc/ssl/certs/ca-certificates.crt"))
	version := moduleVersion(t, CABundleModule)
	var doc spdxDocument
	if err := json.Unmarshal(golden.Read(t, res.SBOM), &doc); err != nil {
		t.Fatal(err)
	}
	var ca *spdxPackage
	for i, p := range doc.Packages {
		if p.Name == "ca-certificates" {
			ca = &doc.Packages[i]
		}
	}
	if ca == nil {
		t.Fatal("the SBOM lists no ca-certificates package")
	}
	if len(ca.Checksums) != 1 || ca.Checksums[0].Algorithm != "SHA256" || ca.Checksums[0].ChecksumValue != hex.EncodeToString(sum[:]) {
		t.Errorf("checksums %+v, want the SHA256 of the image's file %x", ca.Checksums, sum)
	}
	if ca.VersionInfo != version || len(ca.ExternalRefs) != 1 ||
		ca.ExternalRefs[0].ReferenceLocator != "pkg:golang/"+CABundleModule+"@"+version ||
		ca.DownloadLocation != "https://proxy.golang.org/"+CABundleModule+"/@v/"+version+".zip" {
		t.Errorf("package %+v, want version %s of %s", ca, version, CABundleModule)
	}
	contained := false
	for _, r := range doc.Relationships {
		contained = contained || (r.Element == "SPDXRef-Image-odh-serving" && r.Type == "CONTAINS" && r.Related == ca.SPDXID)
	}
	if !contained {
		t.Error("no relationship says the image contains the CA bundle")
	}
}

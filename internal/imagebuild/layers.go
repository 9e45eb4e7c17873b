package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

// The nonroot user and group, as in distroless's static:nonroot.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
	nsswitch = "hosts: files dns\n"
)

// entry is one file or directory of a layer.
type entry struct {
	name     string // without a leading slash; directories end in /
	mode     int64
	uid, gid int
	data     []byte
}

// baseLayer holds what the binary needs from an operating system, with
// the pinned CA bundle: nothing of the build host.
func baseLayer(o Options, ca *CABundle) (v1.Layer, error) {
	return layer("base", o.Created, []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, data: ca.PEM},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532},
		{name: "tmp/", mode: 0o1777},
	})
}

// binaryLayer holds the odh-serving binary at BinaryPath.
func binaryLayer(o Options, binary string) (v1.Layer, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary for its layer: %w", err)
	}
	name := strings.TrimPrefix(BinaryPath, "/")
	var es []entry
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		es = append([]entry{{name: d + "/", mode: 0o755}}, es...)
	}
	return layer(binary, o.Created, append(es, entry{name: name, mode: 0o755, data: data}))
}

// layer writes the entries as a tar with every time set to created, owned by
// root unless said otherwise, gzips it and returns it as an OCI layer.
func layer(what string, created time.Time, entries []entry) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer %s: header of %s: %w", what, e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer %s: writing %s: %w", what, e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer %s: closing the tar: %w", what, err)
	}

	// Compressed here, once, with a fixed level and no gzip header time, so
	// the digest depends on the content only.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", what, err)
	}
	if _, err := io.Copy(zw, &raw); err != nil {
		return nil, fmt.Errorf("layer %s: compressing: %w", what, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("layer %s: compressing: %w", what, err)
	}
	compressed := gz.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", what, err)
	}
	return l, nil
}

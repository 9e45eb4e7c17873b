package imagebuild

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// writeArchive writes the index as an OCI image layout, names it in
// index.json (the tag, and repository:tag for containerd) and tars the layout
// into archive with every entry's time set to the source date.
func writeArchive(o Options, idx v1.ImageIndex, archive string) error {
	dir, err := os.MkdirTemp(o.OutDir, ".layout-")
	if err != nil {
		return fmt.Errorf("creating the layout directory for %s: %w", archive, err)
	}
	defer os.RemoveAll(dir)

	top := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add: idx,
		Descriptor: v1.Descriptor{Annotations: map[string]string{
			AnnotationRefName:        o.Version,
			AnnotationContainerdName: o.Repository + ":" + o.Version,
		}},
	})
	if _, err := layout.Write(dir, top); err != nil {
		return fmt.Errorf("writing the OCI layout for %s: %w", archive, err)
	}

	tmp := archive + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	// WalkDir visits in lexical order, so the archive's order is fixed too.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: o.Created, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Mode, h.Name = tar.TypeDir, 0o755, h.Name+"/"
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", tmp, err), f.Close())
	}
	if err := tw.Close(); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", tmp, err), f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, archive); err != nil {
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}

package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/overlays"
)

// StreamFile is the name the stream gets beside an overlay of kind
// Kustomization, which lists it among its resources.
const StreamFile = "helm-output.yaml"

// Where the pieces go in the in-memory filesystem.
const (
	memBuiltin = "/overlays"
	// memWrapper holds the kustomization that applies a Component over
	// the stream; it names the component relative to itself (kustomize
	// takes no absolute roots), so it must sit one level below /.
	memWrapper = "/odh-serving-post-render"
)

// kustomizationNames are the file names kustomize accepts for the root
// file, in the order it looks for them.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Overlay is a kustomize overlay read into memory.
type Overlay struct {
	// Name is how errors name the overlay: the built-in name or the folder.
	Name string
	// root is the overlay's folder in the in-memory filesystem.
	root string
	// files are the overlay's files by slash path under root.
	files map[string][]byte
	// component is true for kind Component, false for Kustomization.
	component bool
}

// Builtins lists the names of the built-in overlays, sorted.
func Builtins() []string {
	entries, err := fs.ReadDir(overlays.FS(), ".")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// Load reads the overlay ref names: a built-in overlay by name, or else a
// folder on disk. A ref with a path separator or a leading dot is always a
// folder, so ./odh reads a folder named odh, not the built-in.
func Load(ref string) (*Overlay, error) {
	if ref == "" {
		return nil, errors.New("overlay: empty name; want a built-in overlay (" + strings.Join(Builtins(), ", ") + ") or a folder")
	}
	isPath := strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) || strings.HasPrefix(ref, ".")
	if !isPath && slices.Contains(Builtins(), ref) {
		return Builtin(ref)
	}
	info, err := os.Stat(ref)
	if err != nil {
		if !isPath && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("overlay %q: neither a built-in overlay (%s) nor a folder", ref, strings.Join(Builtins(), ", "))
		}
		return nil, fmt.Errorf("overlay %s: %w", ref, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("overlay %s: not a folder; give the folder that holds kustomization.yaml", ref)
	}
	return FromDir(ref)
}

// Builtin returns the built-in overlay name, from overlays/<name>.
func Builtin(name string) (*Overlay, error) {
	if !slices.Contains(Builtins(), name) {
		return nil, fmt.Errorf("overlay %q: no such built-in overlay; built-in: %s", name, strings.Join(Builtins(), ", "))
	}
	sub, err := fs.Sub(overlays.FS(), name)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", name, err)
	}
	return newOverlay(name, path.Join(memBuiltin, name), sub)
}

// FromDir reads the overlay in the folder dir and everything under it.
func FromDir(dir string) (*Overlay, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", dir, err)
	}
	// The copy sits at the folder's own absolute path, so kustomize's
	// messages name the real files.
	return newOverlay(dir, filepath.ToSlash(abs), os.DirFS(dir))
}

func newOverlay(name, root string, fsys fs.FS) (*Overlay, error) {
	o := &Overlay{Name: name, root: root, files: map[string][]byte{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		o.files[p] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overlay %s: read files: %w", name, err)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", name, err)
	}
	return o, nil
}

// check finds the kustomization file, reads its kind, and parses every
// YAML file, so a syntax error names its file before kustomize runs.
func (o *Overlay) check() error {
	var kfile string
	for _, n := range kustomizationNames {
		if _, ok := o.files[n]; ok {
			kfile = n
			break
		}
	}
	if kfile == "" {
		return errors.New("no kustomization.yaml in the folder")
	}
	for _, p := range o.sortedFiles() {
		if p != kfile && !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			continue
		}
		if err := checkYAML(o.files[p]); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	var head struct {
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(o.files[kfile], &head); err != nil {
		return fmt.Errorf("%s: %w", kfile, err)
	}
	switch head.Kind {
	case "Component":
		o.component = true
	case "", "Kustomization":
		if !slices.Contains(head.Resources, StreamFile) {
			return fmt.Errorf("%s: a Kustomization overlay lists the stream as the resource %s; or make it a kind Component to apply it over the stream", kfile, StreamFile)
		}
		if _, ok := o.files[StreamFile]; ok {
			return fmt.Errorf("%s: the overlay has its own %s, where the stream goes", StreamFile, StreamFile)
		}
	default:
		return fmt.Errorf("%s: kind %q: want Component or Kustomization", kfile, head.Kind)
	}
	return nil
}

// checkYAML parses every document of a YAML stream.
func checkYAML(data []byte) error {
	for i, doc := range splitDocs(data) {
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	return nil
}

func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for line := range bytes.Lines(data) {
		if t := bytes.TrimRight(line, "\r\n"); bytes.HasPrefix(t, []byte("---")) && len(bytes.TrimSpace(t[3:])) == 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

func (o *Overlay) sortedFiles() []string {
	names := make([]string, 0, len(o.files))
	for n := range o.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Apply builds the overlay over stream, a multi-document YAML stream, and
// returns the result as a YAML stream.
func (o *Overlay) Apply(stream []byte) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	for _, p := range o.sortedFiles() {
		if err := writeFile(mem, path.Join(o.root, p), o.files[p]); err != nil {
			return nil, fmt.Errorf("overlay %s: %w", o.Name, err)
		}
	}
	build := o.root
	if o.component {
		build = memWrapper
		wrapper := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n- ..%s\nsortOptions:\n  order: fifo\n", StreamFile, o.root)
		if err := writeFile(mem, path.Join(memWrapper, "kustomization.yaml"), []byte(wrapper)); err != nil {
			return nil, err
		}
	}
	if err := writeFile(mem, path.Join(build, StreamFile), stream); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, build)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", o.Name, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("overlay %s: write the result: %w", o.Name, err)
	}
	return out, nil
}

func writeFile(mem filesys.FileSystem, p string, data []byte) error {
	if err := mem.MkdirAll(path.Dir(p)); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if err := mem.WriteFile(p, data); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

package imagebuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/x509roots/fallback/bundle"
	"golang.org/x/mod/modfile"
)

// CABundleModule is the Go module whose root certificates (Mozilla's, from
// the NSS trust store) the image's CA bundle holds: the bundle is pinned by
// go.mod, not copied from the build host.
const CABundleModule = "golang.org/x/crypto/x509roots/fallback"

// CABundle is the image's /etc/ssl/certs/ca-certificates.crt and where it
// comes from.
type CABundle struct {
	// PEM is the file: every root of the module's bundle package that has
	// no constraint, in the package's order. A root with a constraint
	// (distrusted after a date) is left out: a PEM file cannot carry the
	// constraint, and without it the root would be trusted for anything.
	PEM []byte
	// Module and Version are the module the roots come from, at the
	// version go.mod requires.
	Module, Version string
	// SHA256 is the hex SHA-256 of PEM.
	SHA256 string
}

// caBundle makes the CA bundle from the roots compiled into this program,
// naming the version that moduleDir's go.mod requires (the one compiled in
// when imagebuild runs from that module, as `make image` does).
func caBundle(moduleDir string) (*CABundle, error) {
	version, err := requiredVersion(filepath.Join(moduleDir, "go.mod"), CABundleModule)
	if err != nil {
		return nil, fmt.Errorf("the CA bundle's module: %w", err)
	}
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, fmt.Errorf("encoding a root of %s@%s: %w", CABundleModule, version, err)
		}
	}
	sum := sha256.Sum256(b.Bytes())
	return &CABundle{PEM: b.Bytes(), Module: CABundleModule, Version: version, SHA256: hex.EncodeToString(sum[:])}, nil
}

// requiredVersion is the version of module that the go.mod file requires.
func requiredVersion(gomod, module string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Replace {
		if r.Old.Path == module {
			if r.New.Version == "" {
				return "", fmt.Errorf("%s replaces %s by the folder %s, which has no version", gomod, module, r.New.Path)
			}
			return r.New.Version, nil
		}
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, module)
}

package imagebuild

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/module"
)

// SPDX 2.3 JSON, only the fields written here. See
// https://spdx.github.io/spdx-spec/v2.3/.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	LicenseConcluded string            `json:"licenseConcluded,omitempty"`
	LicenseDeclared  string            `json:"licenseDeclared,omitempty"`
	SourceInfo       string            `json:"sourceInfo,omitempty"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

var spdxIDUnsafe = regexp.MustCompile(`[^a-zA-Z0-9.-]+`)

func spdxID(kind, name, version string) string {
	return "SPDXRef-" + kind + "-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(name+"-"+version, "-"), "-")
}

// golangPurl is the package URL of a Go module (or the standard library).
func golangPurl(name, version string) spdxExternalRef {
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: "pkg:golang/" + name + "@" + url.PathEscape(version)}
}

// writeSBOM writes an SPDX 2.3 document for the image: the image (by index
// digest) contains the odh-serving module, which depends on the Go standard
// library and on every module in the binaries' build info (the union over
// the platforms).
func writeSBOM(o Options, res *Result) error {
	doc, err := sbom(o, res)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the SBOM %s: %w", res.SBOM, err)
	}
	if err := os.WriteFile(res.SBOM, append(b, '\n'), 0o644); err != nil { //nolint:gosec // the SBOM is published beside the image: anyone may read it
		return fmt.Errorf("writing the SBOM: %w", err)
	}
	return nil
}

func sbom(o Options, res *Result) (*spdxDocument, error) {
	type module struct{ path, version string }
	deps := map[string]module{}
	var mainPath, goVersion string
	for _, img := range res.Images {
		bi, err := buildinfo.ReadFile(img.Binary)
		if err != nil {
			return nil, fmt.Errorf("reading the Go build info of %s for the SBOM: %w", img.Binary, err)
		}
		mainPath, goVersion = bi.Main.Path, bi.GoVersion
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps[d.Path+"@"+d.Version] = module{d.Path, d.Version}
		}
	}
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	digest := res.IndexDigest.String()
	imageID := "SPDXRef-Image-odh-serving"
	mainID := spdxID("Package-go-module", mainPath, o.Version)
	stdVersion := strings.TrimPrefix(goVersion, "go")
	stdID := spdxID("Package-go-module", "stdlib", stdVersion)
	doc := &spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              o.Repository + ":" + o.Version,
		DocumentNamespace: o.Source + "/spdx/odh-serving-" + o.Version + "-" + res.IndexDigest.Hex,
		CreationInfo: spdxCreationInfo{
			Created:  o.Created.Format(time.RFC3339),
			Creators: []string{"Tool: odh-serving-imagebuild", "Organization: Open Data Hub"},
		},
		Packages: []spdxPackage{
			{
				Name: o.Repository, SPDXID: imageID, VersionInfo: digest,
				DownloadLocation: "NOASSERTION", PrimaryPurpose: "CONTAINER",
				LicenseDeclared: o.Licenses,
				Checksums:       []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: res.IndexDigest.Hex}},
				ExternalRefs: []spdxExternalRef{{
					ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
					ReferenceLocator: "pkg:oci/odh-serving@" + url.PathEscape(digest) +
						"?repository_url=" + url.QueryEscape(o.Repository) + "&tag=" + url.QueryEscape(o.Version),
				}},
			},
			{
				Name: mainPath, SPDXID: mainID, VersionInfo: o.Version,
				DownloadLocation: o.Source, PrimaryPurpose: "APPLICATION",
				LicenseDeclared: o.Licenses,
				// Go module versions start with a v; the release may not.
				ExternalRefs: []spdxExternalRef{golangPurl(mainPath, "v"+strings.TrimPrefix(o.Version, "v"))},
			},
			{
				Name: "stdlib", SPDXID: stdID, VersionInfo: goVersion,
				DownloadLocation: "https://go.dev/dl/", LicenseDeclared: "BSD-3-Clause",
				ExternalRefs: []spdxExternalRef{golangPurl("stdlib", stdVersion)},
			},
		},
		Relationships: []spdxRelationship{
			{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: imageID},
			{Element: imageID, Type: "CONTAINS", Related: mainID},
			{Element: mainID, Type: "DEPENDS_ON", Related: stdID},
		},
	}
	if ca := res.CABundle; ca != nil {
		zip, err := proxyZip(ca.Module, ca.Version)
		if err != nil {
			return nil, fmt.Errorf("the SBOM's CA bundle: %w", err)
		}
		id := spdxID("Package-ca-certificates", ca.Module, ca.Version)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name: "ca-certificates", SPDXID: id, VersionInfo: ca.Version,
			DownloadLocation: zip, PrimaryPurpose: "FILE",
			Checksums:    []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: ca.SHA256}},
			SourceInfo:   CABundlePath + ": the roots without constraints of " + ca.Module + "@" + ca.Version + " (package bundle, Mozilla's NSS trust store), PEM-encoded in its order",
			ExternalRefs: []spdxExternalRef{golangPurl(ca.Module, ca.Version)},
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: imageID, Type: "CONTAINS", Related: id})
	}
	for _, k := range keys {
		m := deps[k]
		zip, err := proxyZip(m.path, m.version)
		if err != nil {
			return nil, fmt.Errorf("the SBOM's module %s: %w", k, err)
		}
		id := spdxID("Package-go-module", m.path, m.version)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name: m.path, SPDXID: id, VersionInfo: m.version,
			DownloadLocation: zip,
			PrimaryPurpose:   "LIBRARY",
			ExternalRefs:     []spdxExternalRef{golangPurl(m.path, m.version)},
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: mainID, Type: "DEPENDS_ON", Related: id})
	}
	return doc, nil
}

// proxyZip is where the Go module proxy serves the zip of path@version,
// both case-escaped as the proxy protocol says.
func proxyZip(path, version string) (string, error) {
	p, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	v, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	return "https://proxy.golang.org/" + p + "/@v/" + v + ".zip", nil
}

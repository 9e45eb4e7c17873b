package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: go build -ldflags "-X <this package>.version=0.2.0 -X <this package>.commit=abc123".
// `make build` and `make image` take the version from the VERSION file (or
// `git describe` when there is none) and the commit from git.
var (
	version = ""
	commit  = ""
)

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the release, such as 0.2.0; "dev" when the linker set none.
	Version string `json:"version"`
	// Commit is the git commit the binary was built from; from the linker,
	// else from the Go build info's vcs.revision, else "unknown".
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// Get returns the build's Info.
func Get() Info {
	i := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Version == "" {
		i.Version = "dev"
	}
	if i.Commit == "" {
		i.Commit = vcsRevision()
	}
	return i
}

// String is the one-line form printed by `odh-serving --version`.
func (i Info) String() string {
	return fmt.Sprintf("odh-serving %s (commit %s, %s, %s)", i.Version, i.Commit, i.GoVersion, i.Platform)
}

func vcsRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

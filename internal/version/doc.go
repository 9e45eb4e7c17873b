// Package version holds what a build of odh-serving says about itself: the
// release version and the git commit, set by the linker from `make`
// (-X .../internal/version.version=... and .commit=...), and the Go version
// the binary was built with. One source for the CLI's `version` command, the
// image's labels and the charts' versions (checked by `make verify`).
package version

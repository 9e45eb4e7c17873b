// Package image tests the controller image that `make image` builds: it opens
// the OCI layout archive named by ODH_SERVING_IMAGE_ARCHIVE with
// go-containerregistry and checks the index, each platform's config and
// labels, the unpacked root filesystem and, for the host's platform, that the
// binary in it runs and reports the right version and commit. Without the
// variable it builds the image itself into a temporary directory, so `go
// test ./...` works alone.
package image

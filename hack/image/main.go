// Command image builds the odh-serving controller image without a container
// engine (see internal/imagebuild and docs/image.md). `make image` runs it:
//
//	go run ./hack/image -repo quay.io/opendatahub/odh-serving -version 0.2.0 -commit $(git rev-parse HEAD) -ldflags "..." -out bin/image
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/imagebuild"
)

func main() {
	var o imagebuild.Options
	flag.StringVar(&o.Repository, "repo", "quay.io/opendatahub/odh-serving", "image repository")
	flag.StringVar(&o.Version, "version", "", "version: the tag and the version label")
	flag.StringVar(&o.Commit, "commit", "", "git commit: the revision label")
	flag.StringVar(&o.LDFlags, "ldflags", "", "go build -ldflags (default: the internal/version -X flags)")
	flag.StringVar(&o.OutDir, "out", "bin/image", "output directory")
	flag.StringVar(&o.ModuleDir, "C", ".", "the odh-serving module root")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o imagebuild.Options) error {
	ctx := context.Background()
	start := time.Now()
	var err error
	if o.Created, err = imagebuild.SourceDate(ctx, o.ModuleDir); err != nil {
		return err
	}
	res, err := imagebuild.Build(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("%s:%s  index %s\n", o.Repository, o.Version, res.IndexDigest)
	for _, img := range res.Images {
		fmt.Printf("  %-12s %s  %.1f MiB compressed\n", img.Platform.String(), img.Digest, float64(img.CompressedSize)/(1<<20))
	}
	fmt.Printf("archive %s\nsbom    %s\n(%.1fs)\n", res.Archive, res.SBOM, time.Since(start).Seconds())
	return nil
}

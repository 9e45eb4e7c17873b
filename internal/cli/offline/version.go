package offline

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/opendatahub-io/odh-serving/internal/version"
)

// NewVersion is the version command.
func NewVersion(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, git commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			info := version.Get()
			switch output {
			case "":
				fmt.Fprintf(s.Out, "version:    %s\ncommit:     %s\ngo version: %s\nplatform:   %s\n", info.Version, info.Commit, info.GoVersion, info.Platform)
			case "json":
				b, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return fmt.Errorf("version: %w", err)
				}
				fmt.Fprintf(s.Out, "%s\n", b)
			case "short":
				fmt.Fprintln(s.Out, info.Version)
			default:
				return fmt.Errorf("version: --output %q: want json or short", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or short (the version alone); default: one field a line")
	return cmd
}

package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/crdlifecycle"
)

func newCRDs(s Streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "crds",
		Short: "Show or remove the CRDs odh-serving owns (serving.kserve.io and the Gateway API Inference Extension's)",
	}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the CRDs odh-serving owns: versions (* = storage), bundle version, field managers and how many custom resources each has",
		Args:  cobra.NoArgs,
		RunE: withCRDClient(&kubeconfig, func(ctx context.Context, c client.Client) error {
			st, err := crdlifecycle.Status(ctx, c)
			if err != nil {
				return err
			}
			return writeCRDStatus(s, st)
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "remove",
		Short: "Delete the CRDs odh-serving owns, only when none of them has a custom resource left",
		Long: "Delete the CRDs odh-serving owns (the serving.kserve.io ones, and the GIE ones it installed) when no custom resource " +
			"of any of them is left. Deleting a CRD deletes its custom resources, so while any is left this deletes nothing and lists them.",
		Args: cobra.NoArgs,
		RunE: withCRDClient(&kubeconfig, func(ctx context.Context, c client.Client) error {
			removed, err := crdlifecycle.Remove(ctx, c)
			for _, name := range removed {
				fmt.Fprintf(s.Out, "deleted %s\n", name)
			}
			if err == nil && len(removed) == 0 {
				fmt.Fprintln(s.Out, "no CRD of odh-serving's is installed")
			}
			return err
		}),
	})
	return cmd
}

// withCRDClient is the RunE of a crds command: run gets a client for the
// CRDs of the cluster *kubeconfig names, and a minute.
func withCRDClient(kubeconfig *string, run func(ctx context.Context, c client.Client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
		defer cancel()
		c, _, err := connect(*kubeconfig, apiextensionsv1.AddToScheme)
		if err != nil {
			return err
		}
		return run(ctx, c)
	}
}

func writeCRDStatus(s Streams, st []crdlifecycle.CRDStatus) error {
	w := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tVERSIONS\tBUNDLE\tMANAGERS\tCRS")
	for _, c := range st {
		if !c.Installed {
			fmt.Fprintf(w, "%s\tabsent\t-\t-\t-\t-\n", c.Name)
			continue
		}
		state := "foreign"
		if c.Ours {
			state = "ours"
		}
		if !c.Established {
			state += " (not established)"
		}
		versions := make([]string, 0, len(c.Served)+1)
		for _, v := range c.Served {
			if v == c.Storage {
				v += "*"
			}
			versions = append(versions, v)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, state, dash(strings.Join(versions, ",")), dash(c.BundleVersion),
			dash(strings.Join(c.Managers, ",")), strconv.Itoa(c.Count))
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

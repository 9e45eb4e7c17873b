package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/opendatahub-io/odh-serving/internal/apiserver"
)

func newAPIServer(_ Streams) *cobra.Command {
	o := apiserver.NewOptions()
	cmd := &cobra.Command{
		Use:   "api-server",
		Short: "Serve modelserving.opendatahub.io/v1alpha1 (Models-as-a-Service) as a Kubernetes extension API server",
		Long: `api-server is an aggregated API server behind the cluster's API server (an
APIService). It serves models (the LLMInferenceServices published to MaaS
that the caller's tier may use), tierreviews, tokenrequests and
tokenrevocations. Authentication and authorization are delegated to the
cluster (TokenReview, the front proxy's client certificate,
SubjectAccessReview); nothing is stored. See docs/maas.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			return apiserver.Run(cmd.Context(), o)
		},
	}
	AddAPIServerFlags(cmd.Flags(), o)
	return cmd
}

// AddAPIServerFlags registers odh-serving api-server's flags on fs, bound
// to o: the options' own and the tier flags the controller takes too.
func AddAPIServerFlags(fs *pflag.FlagSet, o *apiserver.Options) {
	o.AddFlags(fs)
	addTierFlags(fs, &o.Tiers)
}

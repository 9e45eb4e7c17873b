package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/opendatahub-io/odh-serving/api"
	"github.com/opendatahub-io/odh-serving/internal/controller"
)

func newUninstall(s Streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "After helm uninstall odh-serving: clear what only the controller clears",
		Long: `uninstall clears what only the controller clears, for a cluster where it no
longer runs. Run it after helm uninstall odh-serving (README, Uninstall):

  - it removes the finalizer ` + controller.Finalizer + `, which
    earlier versions put on every service, from each service that carries
    it; otherwise deleting the service or its namespace waits forever;
  - it deletes the ClusterRoleBindings the controller made for services
    that are gone (the endpoint pickers' and the metrics readers'), which no
    owner reference reaches.

Services and their other objects stay. It prints what it changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			c, _, err := connect(kubeconfig, func(s *runtime.Scheme) error {
				if err := api.AddToScheme(s); err != nil {
					return err
				}
				return rbacv1.AddToScheme(s)
			})
			if err != nil {
				return err
			}
			return controller.Uninstall(ctx, c, s.Out)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	return cmd
}

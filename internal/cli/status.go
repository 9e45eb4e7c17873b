package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
)

type statusFlags struct {
	kubeconfig    string
	namespace     string
	allNamespaces bool
}

func newStatus(s Streams) *cobra.Command {
	f := &statusFlags{}
	cmd := &cobra.Command{
		Use:   "status [-n NAMESPACE | -A]",
		Short: "List LLMInferenceServices with their readiness, InferencePool, migration phase and autoscalers",
		Long: `status prints a table of LLMInferenceServices as the controller reports
them: NAME, READY and REASON (the Ready condition), POOL and GROUP (the
InferencePool the route sends traffic to), MIGRATION (its v1alpha2 to v1
phase), AUTOSCALERS and URL. AUTOSCALERS lists the HPAs and KEDA
ScaledObjects that scale the service's workloads as KIND/NAME:CURRENT/DESIRED
replicas (hpa/qwen-hpa:3/5; the counts are left out until the autoscaler
reports them). With -A a NAMESPACE column comes first. Rows are sorted.

Under the table, each service that is not Ready gets a line with why: the
Ready condition's reason and message. When a workload's pods are not Ready,
that names the workload, how many of its pods are not Ready and the first
cause in the cluster's words (the scheduler's Unschedulable message, an
image that cannot be pulled, a crash loop, a failing readiness probe).

When auth is on (the chart's default) and Kuadrant is not installed, the
services' routes are withheld (reason CRDMissing); status then says how to
install Kuadrant, or how to turn auth off (auth.enabled=false).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStatus(cmd.Context(), s, f) },
	}
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; default: $KUBECONFIG or ~/.kube/config")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace; default: the kubeconfig context's")
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list services in every namespace")
	return cmd
}

func runStatus(ctx context.Context, s Streams, f *statusFlags) error {
	c, kc, err := connect(f.kubeconfig, v1alpha2.AddToScheme)
	if err != nil {
		return err
	}
	ns := f.namespace
	if ns == "" && !f.allNamespaces {
		if ns, _, err = kc.Namespace(); err != nil {
			return fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	list := &v1alpha2.LLMInferenceServiceList{}
	var opts []client.ListOption
	if !f.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return fmt.Errorf("list LLMInferenceServices: %w", err)
	}
	if len(list.Items) == 0 {
		if f.allNamespaces {
			fmt.Fprintln(s.Err, "No LLMInferenceServices found.")
		} else {
			fmt.Fprintf(s.Err, "No LLMInferenceServices found in namespace %s.\n", ns)
		}
		return nil
	}
	return writeStatusTable(s.Out, list.Items, f.allNamespaces)
}

// writeStatusTable prints services as kubectl does: aligned columns, <none>
// for an empty cell, sorted by namespace and name.
func writeStatusTable(out io.Writer, items []v1alpha2.LLMInferenceService, withNamespace bool) error {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b v1alpha2.LLMInferenceService) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := []string{"NAME", "READY", "REASON", "POOL", "GROUP", "MIGRATION", "AUTOSCALERS", "URL"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for i := range items {
		svc := &items[i]
		ready, reason := "Unknown", ""
		if c := meta.FindStatusCondition(svc.Status.Conditions, v1alpha2.ConditionReady); c != nil {
			ready, reason = string(c.Status), c.Reason
		}
		var pool, group, phase string
		if ip := svc.Status.InferencePool; ip != nil {
			pool, group, phase = ip.Name, ip.Group, ip.MigrationPhase
		}
		row := []string{svc.Name, ready, reason, pool, group, phase, autoscalers(svc.Status.Autoscalers), svc.Status.URL}
		if withNamespace {
			row = append([]string{svc.Namespace}, row...)
		}
		for j := range row {
			if row[j] == "" {
				row[j] = "<none>"
			}
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := writeWhyNotReady(out, items, withNamespace); err != nil {
		return err
	}
	return writeKuadrantMissing(out, items)
}

// kuadrantMissingHint is what status prints under the table when a
// service's route is withheld because Kuadrant's AuthPolicy CRD is missing
// (auth is on, the chart's default): how to install Kuadrant, or how to
// turn auth off, explicitly (docs/auth.md).
const kuadrantMissingHint = `
Auth is on and Kuadrant is not installed: no route is served, so that no model is open.
  Install Kuadrant (Red Hat Connectivity Link on OpenShift) and a Kuadrant resource (docs/auth.md):
    helm repo add kuadrant https://kuadrant.io/helm-charts/
    helm install kuadrant-operator kuadrant/kuadrant-operator -n kuadrant-system --create-namespace
    kubectl -n kuadrant-system create -f - (apiVersion: kuadrant.io/v1beta1, kind: Kuadrant, name: kuadrant)
  then helm upgrade odh-serving (it renders the gateways' AuthPolicies): the routes come, with no restart.
  Or opt out, explicitly, and let anyone who reaches a gateway call every model on it:
    helm upgrade odh-serving <chart> --reuse-values --set auth.enabled=false
`

// writeKuadrantMissing prints kuadrantMissingHint once when a service's
// route is withheld for want of Kuadrant's AuthPolicy CRD.
func writeKuadrantMissing(out io.Writer, items []v1alpha2.LLMInferenceService) error {
	for i := range items {
		for _, c := range items[i].Status.Conditions {
			if c.Type == "HTTPRoutesReady" && c.Status == "False" && c.Reason == "CRDMissing" && strings.Contains(c.Message, "authpolicies.kuadrant.io") {
				_, err := io.WriteString(out, kuadrantMissingHint)
				return err
			}
		}
	}
	return nil
}

// writeWhyNotReady prints "NAME: REASON: MESSAGE" (NAMESPACE/NAME with
// -A) for each service whose Ready condition is False with a message.
func writeWhyNotReady(out io.Writer, items []v1alpha2.LLMInferenceService, withNamespace bool) error {
	for i := range items {
		svc := &items[i]
		c := meta.FindStatusCondition(svc.Status.Conditions, v1alpha2.ConditionReady)
		if c == nil || c.Status != "False" || c.Message == "" {
			continue
		}
		name := svc.Name
		if withNamespace {
			name = svc.Namespace + "/" + name
		}
		if _, err := fmt.Fprintf(out, "%s: %s: %s\n", name, c.Reason, c.Message); err != nil {
			return err
		}
	}
	return nil
}

// autoscalers is the AUTOSCALERS cell: each autoscaler as
// KIND/NAME:CURRENT/DESIRED, comma-separated, with no spaces (one word, as
// kubectl's cells).
func autoscalers(list []v1alpha2.AutoscalerStatus) string {
	cells := make([]string, 0, len(list))
	for _, a := range list {
		kind := strings.ToLower(a.Kind)
		if a.Kind == "HorizontalPodAutoscaler" {
			kind = "hpa"
		}
		cell := kind + "/" + a.Name
		if a.CurrentReplicas != nil && a.DesiredReplicas != nil {
			cell += fmt.Sprintf(":%d/%d", *a.CurrentReplicas, *a.DesiredReplicas)
		}
		cells = append(cells, cell)
	}
	return strings.Join(cells, ",")
}

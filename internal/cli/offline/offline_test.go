package offline_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/internal/cli/offline"
	"github.com/opendatahub-io/odh-serving/internal/golden"
)

// odh-serving-render's commands write what odh-serving's do.
func TestSameOutputAsTheFullCommandLine(t *testing.T) {
	stream := golden.Read(t, "../../../examples/prefill-decode.yaml")
	for _, args := range [][]string{
		{"render", "-f", "-", "--cert-mode", "cert-manager", "--migration-phase", "dual"},
		{"post-render", "--mode", "static", "--namespace", "team-a", "--image-registry", "mirror.example.com"},
		{"version", "-o", "short"},
	} {
		var leanOut, leanErr, fullOut, fullErr bytes.Buffer
		lean := offline.Main(args, offline.Streams{In: bytes.NewReader(stream), Out: &leanOut, Err: &leanErr})
		full := cli.Main(args, cli.Streams{In: bytes.NewReader(stream), Out: &fullOut, Err: &fullErr})
		if lean != 0 || full != 0 {
			t.Fatalf("%v: exit %d (%s) and %d (%s)", args, lean, leanErr.String(), full, fullErr.String())
		}
		if leanOut.Len() == 0 || !bytes.Equal(leanOut.Bytes(), fullOut.Bytes()) {
			t.Errorf("%v: odh-serving-render wrote %d bytes, odh-serving %d; want the same, not empty", args, leanOut.Len(), fullOut.Len())
		}
	}
}

// The render binary stays lean: none of the controller's, the webhooks' or
// the API server's packages, whose initialisation was most of a
// post-render's start.
func TestRenderBinaryLinksNoControllerPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../../../cmd/odh-serving-render").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "sigs.k8s.io/controller-runtime/pkg/conversion" {
			continue // two interfaces api/v1alpha1 implements; it imports only apimachinery
		}
		for _, banned := range []string{
			"sigs.k8s.io/controller-runtime/", "k8s.io/client-go/", "k8s.io/apiextensions-apiserver/", "k8s.io/apiserver/",
			"github.com/google/cel-go/", "github.com/prometheus/", "github.com/opendatahub-io/odh-serving/internal/controller",
			"github.com/opendatahub-io/odh-serving/internal/webhook", "github.com/opendatahub-io/odh-serving/api/crds",
		} {
			if strings.HasPrefix(dep, banned) || dep == strings.TrimSuffix(banned, "/") {
				t.Errorf("cmd/odh-serving-render links %s", dep)
			}
		}
	}
}

// Commands run under a context that SIGTERM (and SIGINT) cancels, so the
// controller and long renders stop cleanly.
func TestExecuteCancelsOnSIGTERM(t *testing.T) {
	root := &cobra.Command{Use: "x", SilenceUsage: true, SilenceErrors: true, RunE: func(cmd *cobra.Command, _ []string) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		select {
		case <-cmd.Context().Done():
			return cmd.Context().Err()
		case <-time.After(10 * time.Second):
			return errors.New("SIGTERM did not cancel the context")
		}
	}}
	var errOut bytes.Buffer
	code := offline.Execute(root, []string{}, offline.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &errOut})
	if code != 1 || !strings.Contains(errOut.String(), "context canceled") {
		t.Errorf("exit %d, stderr %q; want 1 and the cancellation", code, errOut.String())
	}
}

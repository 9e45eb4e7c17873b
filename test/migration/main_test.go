package migration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/cli"
	"github.com/opendatahub-io/odh-serving/test/controlplane"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

// cp has every CRD installed.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// writes counts the requests that may change something (every method but
// GET), through a client of its own.
type writes struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (w *writes) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		w.mu.Lock()
		w.seen = append(w.seen, r.Method+" "+r.URL.Path)
		w.mu.Unlock()
	}
	return w.next.RoundTrip(r)
}

// take returns the writes seen since the last take.
func (w *writes) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// countingClient is a client of the control plane that records its writes.
func countingClient(t *testing.T, on *controlplane.ControlPlane) (client.Client, *writes) {
	t.Helper()
	w := &writes{}
	cfg := rest.CopyConfig(on.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		w.next = rt
		return w
	}
	c, err := client.New(cfg, client.Options{Scheme: on.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

var nsSeq atomic.Int64

// newNamespace makes a namespace for one test, named prefix-N so that
// runs with -count>1 do not collide.
func newNamespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// run runs the odh-serving command line against a control plane.
func run(t *testing.T, on *controlplane.ControlPlane, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := on.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	code = cli.Main(append(args, "--kubeconfig", kubeconfig), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return out.String(), errOut.String(), code
}

package localcluster_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/test/localcluster"
	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// serveEnv makes the test binary the supervisor Up starts (see
// TestIntegrationUpDown); the folder is its last argument.
const serveEnv = "LOCALCLUSTER_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		dir := os.Args[len(os.Args)-1]
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := localcluster.Serve(ctx, localcluster.Options{Dir: dir})
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
	}
	return testenv.NewClient(t, cfg, clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme)
}

// TestIntegrationStart: the in-process cluster answers through the written
// kubeconfig, has no CRDs, allocates from the wide service CIDR and routes a
// Service to a process on this machine, so a webhook with failurePolicy Fail
// behind a Service works.
func TestIntegrationStart(t *testing.T) {
	c, err := localcluster.Start(localcluster.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(c.Kubeconfig); err == nil {
			t.Error("Stop left the kubeconfig of a stopped cluster behind")
		}
	})
	if !strings.HasPrefix(c.APIServerURL(), "https://127.0.0.1:") {
		t.Errorf("API server at %s, want loopback", c.APIServerURL())
	}
	k := newClient(t, c.Kubeconfig)
	ctx := t.Context()

	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := k.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	if len(crds.Items) != 0 {
		t.Errorf("%d CRDs installed, want none: the demo installs them with helm", len(crds.Items))
	}

	// 10.100.0.10 lies outside envtest's default 10.0.0.0/24 and inside
	// the /12.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "wide", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.100.0.10",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
	if err := k.Create(ctx, svc); err != nil {
		t.Errorf("a ClusterIP from the wide service CIDR was rejected: %v", err)
	}

	t.Run("webhook behind a Service reaches this machine", func(t *testing.T) {
		testWebhookThroughService(t, k)
	})
}

func testWebhookThroughService(t *testing.T, k client.Client) {
	t.Helper()
	ip, err := localcluster.HostIP()
	if err != nil {
		t.Skipf("cannot route to this machine: %v", err)
	}
	ctx := t.Context()
	const ns, name = "default", "local-webhook"
	caPEM, cert := serviceCert(t, name+"."+ns+".svc")
	calls := make(chan string, 10)
	port := serveWebhook(t, ip, cert, calls)

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "nothing-runs-here"},
			Ports:    []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromInt32(9443)}},
		},
	}
	if err := k.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.RouteServiceToHost(ctx, k, ns, name, "webhook", port); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "local-webhook"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "configmaps.local-webhook.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Path: ptr.To("/validate"), Port: ptr.To[int32](443)},
				CABundle: caPEM,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": "yes"}},
		}},
	}
	if err := k.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	// The API server picks up a new configuration within a second or so.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("probe-%d", i), Namespace: ns, Labels: map[string]string{"webhook-test": "yes"},
		}}
		err := k.Create(ctx, cm)
		select {
		case got := <-calls:
			if got != cm.Name {
				t.Errorf("webhook saw %q, want %q", got, cm.Name)
			}
			if err != nil {
				t.Errorf("create allowed by the webhook failed: %v", err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook behind Service %s/%s was never called; last create: %v", ns, name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serviceCert returns a CA bundle and a serving certificate for dnsName
// that the CA signed, made as the controller makes its own (internal/certs).
func serviceCert(t *testing.T, dnsName string) ([]byte, tls.Certificate) {
	t.Helper()
	ca, err := certs.NewCA("localcluster test CA", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := certs.Issue(ca, []string{dnsName}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM, cert
}

// serveWebhook serves an allow-all admission webhook at ip, this machine's
// address the API server reaches through the Service (not every
// interface), and reports the names it was asked about.
func serveWebhook(t *testing.T, ip net.IP, cert tls.Certificate, calls chan<- string) int32 {
	t.Helper()
	ln, err := tls.Listen("tcp", net.JoinHostPort(ip.String(), "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls <- review.Request.Name
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// TestIntegrationUpDown: Up starts a supervisor that outlives the call,
// the state file names its processes, and Down stops all of them.
func TestIntegrationUpDown(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(serveEnv, "1")
	serve := []string{self, "-test.run=^$", dir}
	st, err := localcluster.Up(t.Context(), localcluster.Options{Dir: dir}, serve)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = localcluster.Down(dir) })
	if !st.Running() {
		t.Fatal("the supervisor is not running after Up returned")
	}
	if !strings.HasPrefix(st.EtcdURL, "http://127.0.0.1:") || !strings.HasPrefix(st.APIServerURL, "https://127.0.0.1:") {
		t.Errorf("state has etcd at %q and the API server at %q, want both on loopback", st.EtcdURL, st.APIServerURL)
	}
	if runtimeHasProc() && (st.EtcdPID == 0 || st.APIServerPID == 0) {
		t.Errorf("state lacks the control plane's pids: %+v", st)
	}
	nsList := &corev1.NamespaceList{}
	if err := newClient(t, filepath.Join(dir, localcluster.KubeconfigFile)).List(t.Context(), nsList); err != nil {
		t.Fatalf("the cluster Up started does not answer: %v", err)
	}
	if _, err := localcluster.Up(t.Context(), localcluster.Options{Dir: dir}, serve); err == nil {
		t.Error("a second Up in the same folder succeeded")
	}

	if err := localcluster.Down(dir); err != nil {
		t.Fatal(err)
	}
	for what, pid := range map[string]int{"supervisor": st.SupervisorPID, "etcd": st.EtcdPID, "kube-apiserver": st.APIServerPID} {
		if detach.Alive(pid, "") {
			t.Errorf("%s (pid %d) still runs after Down", what, pid)
		}
	}
	if _, err := localcluster.ReadState(dir); err == nil {
		t.Error("Down left the state file")
	}
	if err := localcluster.Down(dir); err != nil {
		t.Errorf("Down without a cluster: %v", err)
	}
}

func runtimeHasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/engine/tier"
	"github.com/opendatahub-io/odh-serving/internal/apiserver"
	"github.com/opendatahub-io/odh-serving/internal/certs"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/hostlock"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// What TestMain sets up.
const (
	systemNS      = "odh-serving-system"
	serviceName   = "odh-serving-api-server"
	tierPrefix    = tier.DefaultNamespacePrefix
	audience      = apiserver.DefaultTokenAudience
	maxExpiration = 24 * time.Hour
)

// tiersYAML is the tier ConfigMap: free holds system:authenticated, as in
// ODH's default mapping, so a user in no tier group is free; premium and
// partner tie on level 10 (premium is listed first); enterprise is the
// highest and listed last.
const tiersYAML = `- name: free
  displayName: Free
  description: every authenticated user
  level: 0
  groups: [system:authenticated]
- name: premium
  displayName: Premium
  level: 10
  groups: [premium-users]
- name: partner
  displayName: Partner
  level: 10
  groups: [partner-users]
- name: enterprise
  displayName: Enterprise
  level: 20
  groups: [enterprise-users]
`

var (
	cp *controlplane.ControlPlane
	// server is the api-server process and what reaches it.
	server *serverProcess
)

// serverProcess is the running `odh-serving api-server`.
type serverProcess struct {
	cmd  *exec.Cmd
	logs *testenv.Buffer
	done chan error
	// address is its host:port, servingCA the CA of its certificate.
	address   string
	servingCA []byte
	// frontProxy is the kube-apiserver's proxy client certificate.
	frontProxyCert, frontProxyKey []byte
	// port is claimed for it until stop.
	port *hostlock.Port
}

func init() { testenv.InitLogger() }

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "odh-serving-apiserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	host := hostIP()
	flags, proxy, err := frontProxy(dir, host)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The serving CRDs alone: the api-server reads LLMInferenceServices and
	// ConfigMaps, and every other CRD would cost the API server CPU to
	// install.
	started, err := controlplane.StartWith(controlplane.Options{CRDs: []string{crds.Serving}, APIServerFlags: flags})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cp = started
	code := 1
	if server, err = startServer(dir, host, proxy); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		if err := server.stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "api-server logs:\n%s\n", server.logs.String())
		}
	}
	if err := started.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// frontProxy makes the front proxy's CA and client certificate in dir and
// returns the kube-apiserver flags that make it a front proxy, routing to
// the api-server's endpoints when the machine has an address for them
// (host; see register).
func frontProxy(dir, host string) (map[string]string, *certs.KeyPair, error) {
	flags, client, err := controlplane.FrontProxy(dir)
	if err != nil {
		return nil, nil, err
	}
	if host != "" {
		flags["enable-aggregator-routing"] = "true"
	}
	return flags, client, nil
}

// startServer sets up what the chart would (namespaces, tier ConfigMap,
// the server's RBAC, Service, EndpointSlice, APIService), builds and
// starts the server and waits until the APIService is Available.
func startServer(dir, host string, proxy *certs.KeyPair) (*serverProcess, error) {
	ctx := context.Background()
	c := cp.Client
	listen := host
	if listen == "" {
		listen = "127.0.0.1"
	}
	// A claimed port (test/hostlock), which the kernel never hands out: one
	// asked of it and closed again could be handed to any process of the
	// machine before the server bound it.
	claimed, err := hostlock.ClaimPort()
	if err != nil {
		return nil, err
	}
	port := claimed.Number
	ca, err := certs.NewCA("api-server-ca", time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	serving, err := certs.Issue(ca, []string{serviceName + "." + systemNS + ".svc", listen}, time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"tls.crt": serving.CertPEM, "tls.key": serving.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tier.ConfigMapName, Namespace: systemNS}, Data: map[string]string{tier.ConfigMapKey: tiersYAML}},
	}
	for _, tier := range []string{"free", "premium", "partner", "enterprise"} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tierPrefix + tier}})
	}
	objs = append(objs, serverRBAC([]string{"free", "premium", "partner", "enterprise"})...)
	objs = append(objs, callerRBAC()...)
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	self, err := cp.AddUser(serverUser)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "api-server.kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, self, ""); err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "odh-serving")
	if err := testenv.BuildCommand(ctx, "odh-serving", bin); err != nil {
		return nil, err
	}
	s := &serverProcess{
		logs: &testenv.Buffer{}, done: make(chan error, 1), address: net.JoinHostPort(listen, strconv.Itoa(port)), port: claimed,
		servingCA: ca.CertPEM, frontProxyCert: proxy.CertPEM, frontProxyKey: proxy.KeyPEM,
	}
	s.cmd = exec.Command(bin, "api-server",
		"--kubeconfig", kubeconfig,
		"--bind-address", listen, "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--tier-config-namespace", systemNS,
		"--token-max-expiration", maxExpiration.String(),
	)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start api-server: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := register(ctx, c, host, port, ca.CertPEM); err != nil {
		return nil, errors.Join(err, s.stop(), fmt.Errorf("api-server logs:\n%s", s.logs.String()))
	}
	return s, nil
}

// register makes the Service, its EndpointSlice and the APIService, and
// waits until the APIService is Available. With aggregator routing the
// kube-apiserver sends to the EndpointSlice's address, which may not be a
// loopback one: the server listens on the machine's own address (host).
// On a machine without one, the Service is of type ExternalName localhost
// and the kube-apiserver, without aggregator routing, sends there.
func register(ctx context.Context, c client.Client, host string, port int, caBundle []byte) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: systemNS},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}},
	}
	servicePort := int64(443)
	if host == "" {
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "localhost"
		servicePort = int64(port)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: serviceName, Namespace: systemNS, Labels: map[string]string{discoveryv1.LabelServiceName: serviceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": modelv1alpha1.GroupVersion.Version + "." + modelv1alpha1.GroupName},
		"spec": map[string]any{
			"group": modelv1alpha1.GroupName, "version": modelv1alpha1.GroupVersion.Version,
			"service":              map[string]any{"namespace": systemNS, "name": serviceName, "port": servicePort},
			"caBundle":             caBundle,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	objs := []client.Object{svc, slice, apiService}
	if host == "" {
		objs = []client.Object{svc, apiService}
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(apiService), apiService); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("APIService %s not Available (%s): %w", apiService.GetName(), last, err)
	}
	return waitDiscovered(ctx)
}

// waitDiscovered waits until the kube-apiserver's discovery lists the
// group's resources. The APIService turns Available before the aggregated
// discovery has fetched them; a client that builds its REST mapper in
// between fails with "unable to retrieve the complete list of server APIs:
// modelserving.opendatahub.io/v1alpha1: no matches".
func waitDiscovered(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	gv := modelv1alpha1.GroupVersion.String()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		_, lists, err := dc.ServerGroupsAndResources()
		if last = err; err != nil {
			return false, nil
		}
		for _, l := range lists {
			if l.GroupVersion == gv && len(l.APIResources) > 0 {
				return true, nil
			}
		}
		last = fmt.Errorf("%s not listed", gv)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("discovery of %s: %w (last: %w)", gv, err, last)
	}
	return nil
}

func (s *serverProcess) stop() error {
	if s.cmd.Process == nil {
		return s.port.Release()
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		// The generic server exits 0 on SIGTERM.
		if err != nil {
			return errors.Join(fmt.Errorf("api-server: %w", err), s.port.Release())
		}
		return s.port.Release()
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		return errors.Join(errors.New("api-server did not stop within 30s of SIGTERM"), s.port.Release())
	}
}

// hostIP is the machine's first IPv4 address that is neither loopback
// nor link-local, what an EndpointSlice may point at, or "" when there is
// none (ODH_SERVING_TEST_NO_HOST_IP=1 pretends so, to test the fallback).
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil || os.Getenv("ODH_SERVING_TEST_NO_HOST_IP") != "" {
		return ""
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			if ip := ipnet.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.String()
			}
		}
	}
	return ""
}

// serverUser is the identity the server runs as.
const serverUser = "odh-serving-api-server"

// serverRBAC is the server's own RBAC as internal/apiserver's doc lists it.
func serverRBAC(tiers []string) []client.Object {
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: serverUser}}
	objs := []client.Object{
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server:auth-delegator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   subject,
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server:auth-reader", Namespace: metav1.NamespaceSystem},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   subject,
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"serving.kserve.io"}, Resources: []string{"llminferenceservices"}, Verbs: []string{"list", "watch"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "odh-serving-api-server"},
			Subjects:   subject,
		},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server:tiers", Namespace: systemNS},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{tier.ConfigMapName},
				Verbs: []string{"get", "list", "watch"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server:tiers", Namespace: systemNS},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "odh-serving-api-server:tiers"},
			Subjects:   subject,
		},
	}
	for _, tier := range tiers {
		ns := tierPrefix + tier
		objs = append(objs,
			&rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server", Namespace: ns},
				Rules: []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "create", "delete"}},
					{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
				},
			},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "odh-serving-api-server", Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "odh-serving-api-server"},
				Subjects:   subject,
			})
	}
	return objs
}

// Users of the tests, by client certificate. noRights has no RBAC on the
// group at all.
const (
	premiumUser    = "alice"
	freeUser       = "bob"
	enterpriseUser = "erin"
	gatewayUser    = "gateway"
	noRights       = "mallory"
	benchUser      = "bench-user"
	// collidingUser finds its ServiceAccount name taken by another user's.
	collidingUser = "carol"
)

// callerRBAC gives the MaaS users get and list on models and create on
// tokenrequests and tokenrevocations (and so to the ServiceAccounts of the
// premium tier, so that a minted identity reaches the server's own
// refusal), and the gateway create on tierreviews.
func callerRBAC() []client.Object {
	users := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: premiumUser},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: freeUser},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: enterpriseUser},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: benchUser},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: collidingUser},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + tierPrefix + "premium"},
	}
	return []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "maas-user"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{modelv1alpha1.GroupName}, Resources: []string{"models"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{modelv1alpha1.GroupName}, Resources: []string{"tokenrequests", "tokenrevocations"}, Verbs: []string{"create"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "maas-user"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "maas-user"},
			Subjects:   users,
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "maas-tier-reviewer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{modelv1alpha1.GroupName}, Resources: []string{"tierreviews"}, Verbs: []string{"create"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "maas-tier-reviewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "maas-tier-reviewer"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: gatewayUser}},
		},
	}
}

// userConfig is a config that reaches the kube-apiserver as name in
// groups, recording the warnings of its responses in warnings.
func userConfig(tb testing.TB, name string, groups ...string) (*rest.Config, *warnings) {
	tb.Helper()
	cfg, err := cp.AddUser(name, groups...)
	if err != nil {
		tb.Fatal(err)
	}
	w := &warnings{}
	cfg.WarningHandlerWithContext = w
	return cfg, w
}

// warnings collects the warnings of responses.
type warnings struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.WriteString(text + "\n")
}

// take returns the warnings so far and forgets them.
func (w *warnings) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.buf.String()
	w.buf.Reset()
	return s
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	modelv1alpha1 "github.com/opendatahub-io/odh-serving/api/modelserving/v1alpha1"
	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
)

// The chart's MaaS API server, and the demo's users: alice is in the
// premium tier's group, bob in none (every authenticated user is free).
const (
	apiServerService = "odh-serving-api-server"
	apiServerSecret  = "odh-serving-api-server-cert"
	apiServiceName   = "v1alpha1.modelserving.opendatahub.io"
	tokenAudience    = "maas-default-gateway-sa"
	premiumGroup     = "premium-users"
)

var demoUsers = []struct{ name, group string }{{"alice", premiumGroup}, {"bob", ""}}

// maasOutcome is what the MaaS step showed.
type maasOutcome struct {
	// Models are the namespace/name of the models each user listed.
	Models map[string][]string
	// TokenTier is the tier of alice's token, TokenUser who the token
	// authenticates as (TokenReview with the MaaS audience).
	TokenTier, TokenUser string
	// MayPost says, per service, whether the token may post to it (the
	// demo's own SubjectAccessReview, the one the MaaS gateway would ask).
	MayPost map[string]bool
	// Bindings names, per service the token may post to, the RoleBinding
	// found and checked to grant it.
	Bindings map[string]string
}

// startAPIServer runs `odh-serving api-server` as a process here, as the
// chart's Deployment would: with the certificate the controller made for
// the chart's Service, as the chart's ServiceAccount (a token of it), the
// Service routed to this machine. It waits until the chart's APIService is
// Available.
func (d *demo) startAPIServer(ctx context.Context) error {
	secret := &corev1.Secret{}
	err := d.poll(ctx, "the controller makes the API server's certificate", 200*time.Millisecond, func() (bool, error) {
		err := d.c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: apiServerSecret}, secret)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(d.cfg.Dir, "api-server")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), secret.Data[name], 0o600); err != nil {
			return fmt.Errorf("write the API server's %s: %w", name, err)
		}
	}
	kubeconfig, err := d.serviceAccountKubeconfig(ctx, dir)
	if err != nil {
		return err
	}
	port, ip, err := d.routeHere(ctx, apiServerService, "https")
	if err != nil {
		return err
	}
	args := []string{d.odh, "api-server", "--kubeconfig", kubeconfig, "--bind-address", ip.String(), "--secure-port", strconv.Itoa(port.Number),
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key"),
		"--tier-config-namespace", systemNamespace}
	logPath := filepath.Join(d.cfg.Dir, "api-server.log")
	d.say("$ %s  > %s", d.commandLine(args[0], args[1:]), d.rel(logPath))
	proc, exited, err := detach.Start(args, nil, logPath, port.File())
	if err != nil {
		return err
	}
	d.apiServer = proc
	d.onTeardown(stopProcess(proc, d.cfg.Dir))
	if err := d.saveState(); err != nil {
		return err
	}
	var last string
	err = d.poll(ctx, "APIService "+apiServiceName+" Available", 300*time.Millisecond, func() (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("the API server exited (%w); %s ends with:\n%s", err, d.rel(logPath), tailFile(logPath))
		default:
		}
		svc := &unstructured.Unstructured{}
		svc.SetAPIVersion("apiregistration.k8s.io/v1")
		svc.SetKind("APIService")
		if err := d.c.Get(ctx, client.ObjectKey{Name: apiServiceName}, svc); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %s); %s ends with:\n%s", err, last, d.rel(logPath), tailFile(logPath))
	}
	d.say("pid %d as ServiceAccount %s/%s (the chart's RBAC only); EndpointSlice %s-localhost -> %s:%d; APIService %s Available (CA injected by the controller)",
		proc.Pid, systemNamespace, apiServerService, apiServerService, ip, port.Number, apiServiceName)
	return nil
}

// serviceAccountKubeconfig writes a kubeconfig that acts as the chart's
// ServiceAccount odh-serving-api-server, with a token the TokenRequest API
// mints for it (a day's life): the API server runs with exactly the
// chart's rights.
func (d *demo) serviceAccountKubeconfig(ctx context.Context, dir string) (string, error) {
	kube, err := kubernetes.NewForConfig(d.restCfg)
	if err != nil {
		return "", err
	}
	day := int64(24 * 60 * 60)
	tr, err := kube.CoreV1().ServiceAccounts(systemNamespace).CreateToken(ctx, apiServerService,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of ServiceAccount %s/%s: %w", systemNamespace, apiServerService, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: d.restCfg.Host, CertificateAuthorityData: d.restCfg.CAData}
	kc.AuthInfos["api-server"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["api-server"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "api-server"}
	kc.CurrentContext = "api-server"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// 13. MaaS: two users' models and a token.
func (d *demo) maas(ctx context.Context) error {
	d.header("Models-as-a-Service: `kubectl get models -A` as two users of different tiers, and a token request")
	if d.apiServer == nil {
		d.say("skipped: the API server needs this machine's address, as the webhook does (step 3)")
		return nil
	}
	out := &maasOutcome{Models: map[string][]string{}, MayPost: map[string]bool{}, Bindings: map[string]string{}}
	d.out.MaaS = out
	for _, u := range demoUsers {
		cfg := d.as(u.name, u.group)
		table, names, err := modelsTable(ctx, cfg)
		if err != nil {
			return fmt.Errorf("list models as %s: %w", u.name, err)
		}
		out.Models[u.name] = names
		tier := "free: every authenticated user"
		if u.group != "" {
			tier = "premium: group " + u.group
		}
		d.say("$ kubectl get models -A --as %s%s   # tier %s", u.name, groupFlag(u.group), tier)
		d.block(table)
	}

	alice := d.as(demoUsers[0].name, demoUsers[0].group)
	token, tier, sa, err := requestToken(ctx, alice)
	if err != nil {
		return fmt.Errorf("request a token as alice: %w", err)
	}
	out.TokenTier = tier
	d.say("$ kubectl create -f - --as alice --as-group %s -o yaml <<< '{apiVersion: %s, kind: TokenRequest, spec: {expirationSeconds: 3600}}'",
		premiumGroup, modelv1alpha1.GroupVersion)
	d.say("  status: tier %s, ServiceAccount %s, a token of %d bytes for the audience %s", tier, sa, len(token), tokenAudience)
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{tokenAudience}}}
	if err := d.c.Create(ctx, review); err != nil {
		return fmt.Errorf("review alice's token: %w", err)
	}
	if !review.Status.Authenticated {
		return fmt.Errorf("alice's token does not authenticate: %s", review.Status.Error)
	}
	out.TokenUser = review.Status.User.Username
	d.say("  TokenReview (audience %s): %s, groups %s", tokenAudience, review.Status.User.Username, strings.Join(review.Status.User.Groups, ", "))
	// The demo's own SubjectAccessReview: the question the MaaS gateway's
	// AuthPolicy asks Kubernetes for each inference call (no gateway asks
	// it here), then the RoleBinding that answers it, read and checked.
	for _, s := range d.services {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: review.Status.User.Username, Groups: review.Status.User.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: build.VerbPost, Group: v1alpha2.GroupVersion.Group, Resource: "llminferenceservices", Namespace: s.Namespace, Name: s.Name,
			},
		}}
		if err := d.c.Create(ctx, sar); err != nil {
			return fmt.Errorf("SubjectAccessReview post on %s: %w", s, err)
		}
		out.MayPost[s.String()] = sar.Status.Allowed
		bindings, err := grantingBindings(ctx, d.c, s, review.Status.User.Username, review.Status.User.Groups)
		if err != nil {
			return err
		}
		want := build.ModelAccessBinding(&v1alpha2.LLMInferenceService{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}, tier)
		granted, err := checkGrant(s, sar.Status.Allowed, bindings, want)
		if err != nil {
			return err
		}
		verdict := "denied, and no RoleBinding in " + s.Namespace + " grants it"
		if granted != "" {
			out.Bindings[s.String()] = granted
			verdict = "allowed by RoleBinding " + s.Namespace + "/" + granted + " (the controller's, checked: it binds the tier's ServiceAccount group to post on this service)"
		}
		d.say("  the demo's own SubjectAccessReview (what the MaaS gateway's AuthPolicy asks), post on %s with this token: %s", s, verdict)
	}
	return nil
}

func groupFlag(group string) string {
	if group == "" {
		return ""
	}
	return " --as-group " + group
}

// as is the admin's config impersonating a user, as kubectl --as does;
// the cluster passes the identity on to the API server as the front proxy.
func (d *demo) as(user, group string) *rest.Config {
	cfg := rest.CopyConfig(d.restCfg)
	groups := []string{"system:authenticated"}
	if group != "" {
		groups = append(groups, group)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return cfg
}

// modelsTable lists models in every namespace as kubectl get does (the
// server's table) and returns it printed, and the models' names.
func modelsTable(ctx context.Context, cfg *rest.Config) (string, []string, error) {
	body, err := call(ctx, cfg, http.MethodGet, "/apis/"+modelv1alpha1.GroupVersion.String()+"/models",
		"application/json;as=Table;v=v1;g=meta.k8s.io", nil)
	if err != nil {
		return "", nil, err
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		return "", nil, fmt.Errorf("decode the table: %w", err)
	}
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 8, 3, ' ', 0)
	cols := []string{"NAMESPACE"}
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(w, strings.Join(cols, "\t"))
	var names []string
	for _, row := range table.Rows {
		meta := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(row.Object.Raw, meta); err != nil {
			return "", nil, fmt.Errorf("decode a row's object: %w", err)
		}
		cells := []string{meta.Namespace}
		for i, c := range table.ColumnDefinitions {
			if c.Priority == 0 && i < len(row.Cells) {
				cells = append(cells, fmt.Sprint(row.Cells[i]))
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
		names = append(names, meta.Namespace+"/"+meta.Name)
	}
	if err := w.Flush(); err != nil {
		return "", nil, err
	}
	if len(table.Rows) == 0 {
		buf.WriteString("No resources found\n")
	}
	return buf.String(), names, nil
}

// requestToken creates a TokenRequest and returns the token, its tier and
// ServiceAccount.
func requestToken(ctx context.Context, cfg *rest.Config) (token, tier, sa string, err error) {
	req := map[string]any{"apiVersion": modelv1alpha1.GroupVersion.String(), "kind": "TokenRequest", "spec": map[string]any{"expirationSeconds": 3600}}
	data, err := json.Marshal(req)
	if err != nil {
		return "", "", "", err
	}
	body, err := call(ctx, cfg, http.MethodPost, "/apis/"+modelv1alpha1.GroupVersion.String()+"/tokenrequests", "application/json", data)
	if err != nil {
		return "", "", "", err
	}
	resp := &modelv1alpha1.TokenRequest{}
	if err := json.Unmarshal(body, resp); err != nil {
		return "", "", "", fmt.Errorf("decode the TokenRequest: %w", err)
	}
	ref := resp.Status.ServiceAccount
	return resp.Status.Token, resp.Status.Tier, ref.Namespace + "/" + ref.Name, nil
}

// call sends one request to the API server and returns the body of a 2xx
// answer.
func call(ctx context.Context, cfg *rest.Config, method, path, accept string, body []byte) ([]byte, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	var in io.Reader = http.NoBody
	if body != nil {
		in = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(cfg.Host, "/")+path, in)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, errors.New(resp.Status + ": " + strings.TrimSpace(string(out)))
	}
	return out, nil
}

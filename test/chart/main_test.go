package chart

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/controlplane"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

const (
	chartDir     = "../../charts/odh-serving"
	crdsChartDir = "../../charts/odh-serving-crds"
	// crdsRelease is the odh-serving-crds release TestMain installs; every
	// test runs with its CRDs.
	crdsRelease   = "odh-serving-crds"
	crdsNamespace = "odh-crds"
	// testValidation names the copy of our validating webhook that checks
	// every object the tests write, whether or not a chart is installed.
	testValidation = "chart-test-validation"
)

var (
	cp *controlplane.ControlPlane
	// env is the environment helm runs with: the control plane's kubeconfig
	// and private helm folders.
	env []string
	// binary is odh-serving, built for the post-renderer.
	binary string
	// chartArchive and crdsArchive are the packaged charts (`make package`,
	// $ODH_SERVING_DIST; else packaged here): what a user installs.
	chartArchive, crdsArchive string
	// webhookURL and webhookCA reach the control plane's webhook server
	// (validation and conversion): the charts' webhook.externalURL and
	// webhook.caBundle, since no controller pod can serve the Service here.
	webhookURL, webhookCA string
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) (code int, err error) {
	if _, err := exec.LookPath("helm"); err != nil {
		return 1, fmt.Errorf("helm is not on PATH; run the tests with `make test`, which builds it into bin/: %w", err)
	}
	dir, err := os.MkdirTemp("", "odh-serving-chart-test-")
	if err != nil {
		return 1, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	binary = filepath.Join(dir, "odh-serving")
	if out, err := exec.Command("go", "build", "-o", binary, "../../cmd/odh-serving").CombinedOutput(); err != nil {
		return 1, fmt.Errorf("build odh-serving: %w\n%s", err, out)
	}
	if chartArchive, crdsArchive, err = archives(dir); err != nil {
		return 1, err
	}
	// The serving and GIE CRDs come from the odh-serving-crds chart: Helm
	// does not adopt objects it did not create.
	cp, err = controlplane.StartWith(controlplane.Options{CRDs: []string{crds.GatewayAPI, crds.LWS, crds.CertManager}})
	if err != nil {
		return 1, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	if err := setUp(dir); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

// setUp writes the kubeconfig and helm's folders, moves the control plane's
// webhook configuration out of the charts' way and installs odh-serving-crds.
func setUp(dir string) error {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig); err != nil {
		return err
	}
	env = append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(dir, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "helm-data"),
	)
	ctx := context.Background()
	if err := renameValidation(ctx); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, crdsNamespace); err != nil {
		return err
	}
	out, err := helmCmd(ctx, "install", crdsRelease, crdsArchive, "-n", crdsNamespace, "--wait",
		"--set", "webhook.externalURL="+webhookURL, "--set", "webhook.caBundle="+webhookCA)
	if err != nil {
		return fmt.Errorf("install the odh-serving-crds chart from %s: %w\n%s", crdsArchive, err, out)
	}
	return nil
}

func writeKubeconfig(path string) error {
	cfg := cp.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// renameValidation replaces the control plane's odh-serving-validation,
// whose name the chart owns, with an identical configuration under another
// name, and records where the webhook server listens.
func renameValidation(ctx context.Context) error {
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: webhook.ValidatingConfigurationName}, vwc); err != nil {
		return fmt.Errorf("get the control plane's webhook configuration: %w", err)
	}
	cc := vwc.Webhooks[0].ClientConfig
	if cc.URL == nil {
		return errors.New("the control plane's webhook configuration has no URL")
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %w", *cc.URL, err)
	}
	webhookURL = u.Scheme + "://" + u.Host
	webhookCA = base64.StdEncoding.EncodeToString(cc.CABundle)
	renamed := &admissionv1.ValidatingWebhookConfiguration{Webhooks: vwc.Webhooks}
	renamed.Name = testValidation
	if err := cp.Client.Create(ctx, renamed); err != nil {
		return fmt.Errorf("create %s: %w", testValidation, err)
	}
	if err := cp.Client.Delete(ctx, vwc); err != nil {
		return fmt.Errorf("delete %s: %w", vwc.Name, err)
	}
	return nil
}

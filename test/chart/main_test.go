package chart

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/api/crds"
	"github.com/opendatahub-io/odh-serving/internal/webhook"
	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"

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
	// helm runs with the control plane's kubeconfig and private folders.
	helm *testenv.Helm
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
	flag.Parse()
	testenv.UseTestGOGC()
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
	dir, err := os.MkdirTemp("", "odh-serving-chart-test-")
	if err != nil {
		return 1, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if helm, err = testenv.NewHelm("helm", dir, kubeconfig); err != nil {
		return 1, err
	}
	binary = filepath.Join(dir, "odh-serving")
	if err := testenv.BuildCommand(context.Background(), "odh-serving", binary); err != nil {
		return 1, err
	}
	if chartArchive, crdsArchive, err = archives(dir); err != nil {
		return 1, err
	}
	// The serving and GIE CRDs come from the odh-serving-crds chart: Helm
	// does not adopt objects it did not create. Kuadrant's are there for
	// the gateways' AuthPolicies (auth.enabled), as Kuadrant would install
	// them.
	cp, err = controlplane.StartWith(controlplane.Options{CRDs: []string{crds.GatewayAPI, crds.LWS, crds.CertManager, crds.Kuadrant}})
	if err != nil {
		return 1, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	if err := setUp(kubeconfig); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

// setUp writes the kubeconfig, moves the control plane's webhook
// configuration out of the charts' way and installs odh-serving-crds.
func setUp(kubeconfig string) error {
	if err := testenv.WriteKubeconfig(kubeconfig, cp.Config, ""); err != nil {
		return err
	}
	ctx := context.Background()
	if err := renameValidation(ctx); err != nil {
		return err
	}
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crdsNamespace}}); err != nil {
		return fmt.Errorf("create namespace %s: %w", crdsNamespace, err)
	}
	out, err := helm.Run(ctx, "install", crdsRelease, crdsArchive, "-n", crdsNamespace, "--wait",
		"--set", "webhook.externalURL="+webhookURL, "--set", "webhook.caBundle="+webhookCA)
	if err != nil {
		return fmt.Errorf("install the odh-serving-crds chart from %s: %w\n%s", crdsArchive, err, out)
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

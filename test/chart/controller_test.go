package chart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// chartController is odh-serving controller run as the installed chart's
// Deployment would run it.
type chartController struct {
	// log is what the controller wrote (zap JSON lines).
	log  *testenv.Buffer
	stop func()
}

// runChartController starts the odh-serving binary with the args of the
// chart's Deployment in namespace, as the chart's ServiceAccount
// (impersonated): exactly the chart's RBAC. No kubelet runs the chart's
// pod here, so what the pod would need of the machine is switched off
// after the chart's args (later flags win): the webhook server (the
// control plane serves the webhooks), the metrics and probe ports (other
// tests share the machine), leader election (a stopped run would hold the
// Lease) and --manage-crds (the odh-serving-crds release owns the GIE CRDs
// here). It stops when the test ends.
func runChartController(t *testing.T, namespace string) *chartController {
	t.Helper()
	args := containerArgs(t, namespace, "odh-serving-controller")
	if len(args) == 0 || args[0] != "controller" {
		t.Fatalf("the controller's args %v, want controller first", args)
	}
	args = append(args, "--kubeconfig="+serviceAccountKubeconfig(t, namespace, "odh-serving-controller"),
		"--disable-webhooks", "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--leader-elect=false", "--manage-crds=false")
	c := &chartController{log: &testenv.Buffer{}}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start the controller: %v", err)
	}
	stopped := false
	c.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		// Interrupted, it exits; how is not the test's concern. That it
		// did not exit before is: the test waited on it.
		_ = cmd.Wait()
	}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("the controller's log:\n%s", c.log)
		}
	})
	return c
}

// errors returns the log lines at error level.
func (c *chartController) errors() []string {
	var out []string
	for _, line := range strings.Split(c.log.String(), "\n") {
		if strings.Contains(line, `"level":"error"`) {
			out = append(out, line)
		}
	}
	return out
}

// serviceAccountKubeconfig writes a kubeconfig that reaches the control
// plane as the ServiceAccount namespace/name (impersonated by the test's
// administrator), with the groups the API server gives a ServiceAccount.
func serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	path := testenv.Kubeconfig(t, cp.Config, "")
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + namespace + ":" + name
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	out := filepath.Join(t.TempDir(), "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*kc, out); err != nil {
		t.Fatal(err)
	}
	return out
}

package controlplane

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"testing"

	"github.com/opendatahub-io/odh-serving/test/hostlock"
)

// etcd, kube-apiserver and the webhook server listen at ports claimed for
// them, from the range the kernel never hands out, so that no other
// process of the machine can be given one before they bind it; a
// Restartable API server's port stays claimed while it is stopped.
func TestPortsClaimed(t *testing.T) {
	cp, err := StartWith(Options{CRDs: []string{}, Restartable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	apiURL, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{
		"etcd":           cp.env.ControlPlane.Etcd.URL.Host,
		"kube-apiserver": apiURL.Host,
		"webhook server": net.JoinHostPort(cp.env.WebhookInstallOptions.LocalServingHost, strconv.Itoa(cp.env.WebhookInstallOptions.LocalServingPort)),
	}
	held := func(when string) {
		t.Helper()
		for what, addr := range ports {
			_, p, _ := net.SplitHostPort(addr)
			n, _ := strconv.Atoi(p)
			if n < hostlock.FirstPort || n > hostlock.LastPort {
				t.Errorf("%s: %s at %s, want a claimed port, from %d to %d", when, what, addr, hostlock.FirstPort, hostlock.LastPort)
				continue
			}
			if _, err := hostlock.Try(hostlock.Dir(), hostlock.PortName(n)); !errors.Is(err, hostlock.ErrHeld) {
				t.Errorf("%s: %s's port %d: a claim by another process got %v, want ErrHeld", when, what, n, err)
			}
		}
	}
	held("running")
	if err := cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	held("API server stopped")
	if err := cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
}

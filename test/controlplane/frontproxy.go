package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opendatahub-io/odh-serving/internal/certs"
)

// FrontProxyName is the common name of the front proxy's client
// certificate: the only name an aggregated API server takes identity
// headers from.
const FrontProxyName = "front-proxy-client"

// FrontProxy makes a front-proxy CA and its client certificate (a day's
// life) in dir and returns the kube-apiserver flags that make the API
// server the front proxy of aggregated API servers: the request-header CA,
// allowed name and headers it publishes in
// kube-system/extension-apiserver-authentication, and the client
// certificate it presents when it proxies. Callers without a kube-proxy
// add enable-aggregator-routing, so that it reaches an APIService's
// Service through its EndpointSlices.
func FrontProxy(dir string) (map[string]string, *certs.KeyPair, error) {
	now := time.Now()
	ca, err := certs.NewCA("front-proxy-ca", now, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	client, err := certs.IssueClient(ca, FrontProxyName, now, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{"front-proxy-ca.crt": ca.CertPEM, "front-proxy-client.crt": client.CertPEM, "front-proxy-client.key": client.KeyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, fmt.Errorf("front proxy: write %s: %w", name, err)
		}
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        FrontProxyName,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(dir, "front-proxy-client.key"),
	}, client, nil
}

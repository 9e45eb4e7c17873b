package testenv

import (
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig writes a kubeconfig that reaches cfg's API server as cfg's
// user to a temporary folder of the test's, and returns its path.
// namespace, when not empty, is the context's namespace.
func Kubeconfig(tb testing.TB, cfg *rest.Config, namespace string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, cfg, namespace); err != nil {
		tb.Fatal(err)
	}
	return path
}

// WriteKubeconfig is Kubeconfig to a path of the caller's, for TestMain.
func WriteKubeconfig(path string, cfg *rest.Config, namespace string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: namespace}
	kc.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// connect makes a client, knowing the types addToScheme adds, for the
// cluster of the kubeconfig file, or of $KUBECONFIG and ~/.kube/config
// when it is empty (as kubectl finds it). It returns the client config
// too, for its context's namespace.
func connect(kubeconfig string, addToScheme func(*runtime.Scheme) error) (client.Client, clientcmd.ClientConfig, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := kc.ClientConfig()
	if err != nil {
		if kubeconfig == "" {
			kubeconfig = "from $KUBECONFIG or ~/.kube/config"
		}
		return nil, nil, fmt.Errorf("read kubeconfig %s: %w", kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	return c, kc, nil
}

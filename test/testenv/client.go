package testenv

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewClient is a client of cfg that knows the kinds that kinds (each an
// API package's AddToScheme or Install) register.
func NewClient(tb testing.TB, cfg *rest.Config, kinds ...func(*runtime.Scheme) error) client.Client {
	tb.Helper()
	scheme := runtime.NewScheme()
	for _, add := range kinds {
		if err := add(scheme); err != nil {
			tb.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

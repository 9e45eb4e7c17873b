package simdataplane_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/simdataplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, &cp) }

// syncBuffer collects the simulator's log lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDataPlane runs a simulation until the test ends.
func startDataPlane(t *testing.T, opts simdataplane.Options) *syncBuffer {
	t.Helper()
	log := &syncBuffer{}
	opts.Log = log
	d, err := simdataplane.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("simulated data plane: %v", err)
		}
	})
	return log
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := cp.Client.Create(t.Context(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func get(t *testing.T, obj client.Object, namespace, name string) error {
	t.Helper()
	return cp.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
}

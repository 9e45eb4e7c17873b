package simdataplane_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opendatahub-io/odh-serving/test/controlplane"
	"github.com/opendatahub-io/odh-serving/test/simdataplane"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { testenv.Main(m, &cp) }

// startDataPlane runs a simulation until the test ends.
func startDataPlane(t *testing.T, opts simdataplane.Options) *testenv.Buffer {
	t.Helper()
	log := &testenv.Buffer{}
	opts.Log = log
	d, err := simdataplane.New(cp.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Start(t, "simulated data plane", d.Start)
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

// waitStatus reads the object namespace/name afresh until check passes on
// it, within 20 s: the simulator reports status a moment after it sees an
// object.
func waitStatus[T any, P interface {
	*T
	client.Object
}](t *testing.T, namespace, name string, check func(P) error) {
	t.Helper()
	testenv.Within(t, 20*time.Second, "the simulated status of "+name, func() error {
		obj := P(new(T))
		if err := get(t, obj, namespace, name); err != nil {
			return err
		}
		return check(obj)
	})
}

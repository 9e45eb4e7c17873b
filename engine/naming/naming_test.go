package naming_test

import (
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/naming"

	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestChildName(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := map[string]struct {
		parent, suffix, want string
	}{
		"short":       {"llama", "-inference-pool", "llama-inference-pool"},
		"exact limit": {strings.Repeat("b", 48), "-inference-pool", strings.Repeat("b", 48) + "-inference-pool"},
		// knative's kmeta.ChildName gives this for a 63-character parent.
		"hashed": {long, "-epp-service", strings.Repeat("a", 19) + "b06521f39153d618550606be297466d5" + "-epp-service"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := naming.ChildName(tc.parent, tc.suffix)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > naming.MaxLength {
				t.Errorf("%q is %d characters", got, len(got))
			}
			if got != tc.want {
				t.Errorf("ChildName = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := naming.ChildName(long, strings.Repeat("-x", 16)); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("a 32-character suffix must be an error, got %v", err)
	}
}

func TestChildNameIsStableAndDistinct(t *testing.T) {
	a1, _ := naming.ChildName(strings.Repeat("a", 60)+"one", "-kserve-workload-svc")
	a2, _ := naming.ChildName(strings.Repeat("a", 60)+"one", "-kserve-workload-svc")
	b, _ := naming.ChildName(strings.Repeat("a", 60)+"two", "-kserve-workload-svc")
	if a1 != a2 || a1 == b {
		t.Errorf("names must be stable and distinct: %q %q %q", a1, a2, b)
	}
}

func TestSafeChildName(t *testing.T) {
	tests := map[string]struct {
		parent, suffix string
		hashed         bool
	}{
		"short":               {"llama", "-kserve", false},
		"exact budget":        {strings.Repeat("c", 36), "-kserve", false},
		"long":                {strings.Repeat("d", 63), "-kserve", true},
		"long prefill suffix": {strings.Repeat("e", 63), "-kserve-mn-prefill", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := naming.SafeChildName(tc.parent, tc.suffix)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > naming.WorkloadBudget || !strings.HasSuffix(got, tc.suffix) {
				t.Errorf("%q: want at most %d characters ending in %q", got, naming.WorkloadBudget, tc.suffix)
			}
			if hashed := got != tc.parent+tc.suffix; hashed != tc.hashed {
				t.Errorf("%q: hashed = %v, want %v", got, hashed, tc.hashed)
			}
		})
	}
	if _, err := naming.SafeChildName(strings.Repeat("x", 40), strings.Repeat("s", 36)); err == nil {
		t.Error("a 36-character suffix must be an error")
	}
}

// Cluster-scoped names tell apart every namespace and name, even those
// that join to the same string, and fit in 63 characters.
func TestClusterChildName(t *testing.T) {
	seen := map[string]string{}
	long := strings.Repeat("n", 63)
	for _, o := range [][2]string{
		{"a", "b-c"}, {"a-b", "c"}, {"team-a", "qwen"},
		{long, long}, {long, long[:62] + "m"}, // the same cut prefix
	} {
		got, err := naming.ClusterChildName(o[0], o[1], "-kserve-metrics-reader")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > naming.MaxLength || !strings.HasSuffix(got, "-kserve-metrics-reader") {
			t.Errorf("%s/%s: %q: want at most 63 characters ending in the suffix", o[0], o[1], got) //nolint:gosec // G602: o is a [2]string, o[1] is in range
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%s/%s and %s both get %q", o[0], o[1], prev, got)
		}
		seen[got] = o[0] + "/" + o[1]
	}
	got, _ := naming.ClusterChildName("team-a", "qwen", "-epp-auth-rb")
	if want := "team-a-qwen-"; !strings.HasPrefix(got, want) || len(got) != len(want)+naming.ClusterHashLength+len("-epp-auth-rb") {
		t.Errorf("%q: want the readable %q, %d hex characters and the suffix", got, want, naming.ClusterHashLength)
	}
	if _, err := naming.ClusterChildName("a", "b", strings.Repeat("s", 46)); err == nil {
		t.Error("a 46-character suffix must be an error")
	}
	if _, err := naming.ClusterChildName("a", "b", strings.Repeat("s", 45)); err != nil {
		t.Errorf("a 45-character suffix: %v", err)
	}
}

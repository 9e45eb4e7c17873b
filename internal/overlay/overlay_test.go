package overlay_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/internal/overlay"
)

const stream = `# Source: chart/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: team-a
data:
  size: "1"
---
apiVersion: v1
kind: Service
metadata:
  name: odh-serving-webhook
  namespace: team-a
spec:
  ports:
  - port: 443
`

func TestBuiltins(t *testing.T) {
	if got := overlay.Builtins(); !slices.Equal(got, []string{"kubernetes", "odh", "openshift"}) {
		t.Errorf("built-in overlays %q", got)
	}
	for _, name := range overlay.Builtins() {
		if _, err := overlay.Builtin(name); err != nil {
			t.Errorf("built-in overlay %s: %v", name, err)
		}
	}
}

func TestApply(t *testing.T) {
	tests := map[string]struct {
		ref  string
		want []string
	}{
		"component from a folder":          {ref: "testdata/component", want: []string{"mode: overlaid", "team: a", "name: odh-serving-webhook"}},
		"kustomization listing the stream": {ref: "./testdata/kustomization", want: []string{"name: x-settings", "name: x-extra", "size: \"1\""}},
		"built-in by name":                 {ref: "openshift", want: []string{"service.beta.openshift.io/serving-cert-secret-name: odh-serving-webhook-cert", "name: settings"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := overlay.Load(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			out, err := o.Apply([]byte(stream))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			again, err := o.Apply([]byte(stream))
			if err != nil || !bytes.Equal(out, again) {
				t.Errorf("a second build differs (err %v)", err)
			}
		})
	}
}

func TestOutputKeepsStreamOrder(t *testing.T) {
	o, err := overlay.Load("testdata/component")
	if err != nil {
		t.Fatal(err)
	}
	out, err := o.Apply([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if cm, svc := strings.Index(string(out), "kind: ConfigMap"), strings.Index(string(out), "kind: Service"); cm < 0 || svc < cm {
		t.Errorf("the ConfigMap must stay before the Service:\n%s", out)
	}
}

func TestErrorsNameTheOverlayAndFile(t *testing.T) {
	tests := map[string]struct {
		ref, input string
		want       []string
	}{
		"unknown name":     {ref: "odhh", want: []string{`overlay "odhh": neither a built-in overlay (kubernetes, odh, openshift) nor a folder`}},
		"missing folder":   {ref: "./nope", want: []string{"overlay ./nope:", "no such file or directory"}},
		"file, not folder": {ref: "testdata/component/kustomization.yaml", want: []string{"not a folder"}},
		"no kustomization": {ref: "testdata/component/patches", want: []string{"overlay testdata/component/patches: no kustomization.yaml"}},
		"stream not listed": {ref: "testdata/no-stream", want: []string{
			"overlay testdata/no-stream: kustomization.yaml: a Kustomization overlay lists the stream as the resource helm-output.yaml",
		}},
		"broken YAML":  {ref: "testdata/broken-yaml", want: []string{"overlay testdata/broken-yaml: patch.yaml: document 1:", "line 4"}},
		"failed patch": {ref: "testdata/bad-patch", input: stream, want: []string{"overlay testdata/bad-patch:", "testing value /data/size failed"}},
		"bad stream":   {ref: "testdata/component", input: "kind: [", want: []string{"overlay testdata/component:", "helm-output.yaml"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := overlay.Load(tc.ref)
			if err == nil {
				_, err = o.Apply([]byte(tc.input))
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// The golden package registers -update for this test binary.
var _ = golden.Updating

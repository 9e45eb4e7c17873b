package crdlifecycle

import (
	"fmt"
	"strings"
	"testing"

	"github.com/opendatahub-io/odh-serving/engine/convention"
	_ "github.com/opendatahub-io/odh-serving/internal/golden" // registers -update, so `go test ./... -update` runs in every package
)

func TestNewerThan(t *testing.T) {
	cases := []struct {
		live, ours string
		newer      bool
		err        bool
	}{
		{live: "v1.5.0", ours: "v1.3.1", newer: true},
		{live: "v1.3.1", ours: "v1.3.1"},
		{live: "v1.3.0", ours: "v1.3.1"},
		{live: "v1.3.1", ours: "v1.3.1-rc.1", newer: true},
		{live: "v1.5.0-rc.2", ours: "v1.3.1", newer: true},
		{live: "v1.3.1-rc.1", ours: "v1.3.1"},
		{live: "1.10.0", ours: "v1.9.0", newer: true},
		{live: "v1.3.1+build.7", ours: "v1.3.1"},
		{live: "latest", ours: "v1.3.1", err: true},
		{live: "v1.3", ours: "v1.3.1", err: true},
	}
	for _, tc := range cases {
		newer, err := newerThan(tc.live, tc.ours)
		if (err != nil) != tc.err || newer != tc.newer {
			t.Errorf("newerThan(%q, %q) = %v, %v; want newer %v, error %v", tc.live, tc.ours, newer, err, tc.newer, tc.err)
		}
	}
}

func TestSubset(t *testing.T) {
	cases := []struct {
		name       string
		want, have any
		ok         bool
	}{
		{"equal scalars", "a", "a", true},
		{"different scalars", "a", "b", false},
		{"extra field live", map[string]any{"a": 1.0}, map[string]any{"a": 1.0, "b": 2.0}, true},
		{"missing field live", map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": 1.0}, false},
		{"list items are subsets", []any{map[string]any{"a": 1.0}}, []any{map[string]any{"a": 1.0, "c": true}}, true},
		{"list length differs", []any{"x"}, []any{"x", "y"}, false},
		{"list order matters", []any{"x", "y"}, []any{"y", "x"}, false},
		{"type differs", map[string]any{}, []any{}, false},
	}
	for _, tc := range cases {
		if got := subset(tc.want, tc.have); got != tc.ok {
			t.Errorf("%s: subset = %v", tc.name, got)
		}
	}
}

func TestGIECRDs(t *testing.T) {
	got, err := GIECRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range got {
		names = append(names, crd.Name)
		if crd.Labels[convention.LabelManagedBy] != convention.ManagedBy {
			t.Errorf("%s: no managed-by label", crd.Name)
		}
		if bundleVersion(crd) == "" {
			t.Errorf("%s: no bundle version", crd.Name)
		}
		if crd.Spec.Conversion == nil {
			t.Errorf("%s: not defaulted like the API server does", crd.Name)
		}
	}
	// Every CRD GIE v1.3.1 ships in config/crd/bases.
	want := "inferencepools.inference.networking.k8s.io inferencemodelrewrites.inference.networking.x-k8s.io " +
		"inferenceobjectives.inference.networking.x-k8s.io inferencepoolimports.inference.networking.x-k8s.io " + Alpha2PoolCRD
	if strings.Join(names, " ") != want {
		t.Errorf("GIE CRDs: %v", names)
	}
	got[0].Labels["changed"] = "yes"
	again, err := GIECRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, leaked := again[0].Labels["changed"]; leaked {
		t.Error("GIECRDs hands out shared objects")
	}
}

func TestLeftErrorNamesTenAndCountsTheRest(t *testing.T) {
	var left []string
	for i := range 13 {
		left = append(left, fmt.Sprintf("InferencePool ns/p%d", i))
	}
	msg := (&LeftError{Left: left}).Error()
	if !strings.Contains(msg, "13 custom resources are left") || !strings.Contains(msg, "ns/p9, and 3 more") || strings.Contains(msg, "p10") {
		t.Errorf("message: %s", msg)
	}
	if msg := (&LeftError{Left: left[:2]}).Error(); strings.Contains(msg, "more") {
		t.Errorf("message: %s", msg)
	}
}

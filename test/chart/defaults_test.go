package chart

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDefaultsProtectTheGateways (issue #32, item 6): `helm template` of
// the chart with no values at all runs the controller with --enable-auth
// and renders an AuthPolicy on each Gateway the chart makes, so that no
// model is open by default; auth.enabled=false is the explicit opt-out.
func TestDefaultsProtectTheGateways(t *testing.T) {
	_, objs := render(t, templateArgs(chartDir, "")...)
	var args []string
	gateways := map[string]bool{}
	policies := map[string]bool{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			if o.GetName() != "odh-serving-controller" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				if c, ok := c.(map[string]any); ok && c["name"] == "manager" {
					a, _, _ := unstructured.NestedStringSlice(c, "args")
					args = append(args, a...)
				}
			}
		case "Gateway":
			gateways[o.GetNamespace()+"/"+o.GetName()] = true
		case "AuthPolicy":
			ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "targetRef")
			if ref["kind"] == "Gateway" && ref["sectionName"] == "" {
				policies[o.GetNamespace()+"/"+ref["name"]] = true
			}
		}
	}
	if !slices.Contains(args, "--enable-auth") {
		t.Errorf("with the default values the controller runs without --enable-auth: %q", args)
	}
	if len(gateways) == 0 {
		t.Error("the default values make no Gateway")
	}
	for gw := range gateways {
		if !policies[gw] {
			t.Errorf("with the default values no AuthPolicy targets the whole Gateway %s: its models are open", gw)
		}
	}

	// The opt-out is explicit, and says what it costs.
	_, objs = render(t, templateArgs(chartDir, "", "--set", "auth.enabled=false")...)
	for _, o := range objs {
		if o.GetKind() == "AuthPolicy" {
			t.Errorf("auth.enabled=false renders AuthPolicy %s/%s", o.GetNamespace(), o.GetName())
		}
	}
}

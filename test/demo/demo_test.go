package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/engine/manifest"
	"github.com/opendatahub-io/odh-serving/internal/golden"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/localcluster"
	"github.com/opendatahub-io/odh-serving/test/testenv"
)

// TestIntegrationDemo runs the demo's seventeen steps with the cluster and
// the simulated data plane started by the test, and checks what they
// achieved: every service Ready with its route on the v1 InferencePool, the
// children the engine renders for each service (kind by kind) live in the
// cluster, the helm upgrade scaled the decode Deployment, the HPA's count
// was left alone, the GPU services' pods ran on GPU nodes sized by their
// tensor parallelism, the oversized one was reported unschedulable in the
// scheduler's words and ran after the fix, and its deletion left no
// Deployment, ReplicaSet or Pod.
//
// Without a routable host address the demo leaves out the webhooks and
// Models-as-a-Service: the test then skips, naming them, after the rest
// passed, and fails at once when CI is set (coverageGap).
func TestIntegrationDemo(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	loopbackOnly := os.Getenv(loopbackOnlyEnv) != ""
	hostErr := errLoopbackOnly
	if !loopbackOnly {
		_, hostErr = localcluster.HostIP()
	}
	skip, fatal := coverageGap(hostErr, os.Getenv("CI") != "")
	if fatal != "" {
		t.Fatal(fatal)
	}
	var out bytes.Buffer
	bin := filepath.Join(t.TempDir(), "odh-serving")
	// Under `make test` ($ODH_SERVING_BIN), step 1 runs a copy of `make
	// build`'s binary rather than link its own (8 s of CPU or more);
	// otherwise it builds it as `make demo` does.
	built := os.Getenv(testenv.BinDirEnv) != ""
	if built {
		if err := testenv.BuildCommand(t.Context(), "odh-serving", bin); err != nil {
			t.Fatal(err)
		}
	}
	res, err := runDemo(t.Context(), config{
		Root: root, Dir: t.TempDir(), Out: &out, Binary: bin, Built: built,
		Timeout: 3 * time.Minute, LoopbackOnly: loopbackOnly,
	})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}

	services, err := readServices(filepath.Join(root, valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Services) != len(services) {
		t.Errorf("%d services reported, want %d: %v", len(res.Services), len(services), res.Services)
	}
	for name, s := range res.Services {
		if !s.Ready || s.Phase != "v1" || s.URL == "" {
			t.Errorf("service %s: %+v, want Ready on phase v1 with a URL", name, s)
		}
	}

	checkRequests(t, res.Requests)

	// Without MaaS (no routable host address) the controller runs without
	// --maas: no tier's RBAC is rendered.
	want := renderedKinds(t, root, bin, services, hostErr == nil)
	for _, s := range services {
		got := res.Objects[s.String()]
		for kind, n := range want[s.String()] {
			if got[kind] != n {
				t.Errorf("service %s: %d %s live, the engine renders %d", s, got[kind], kind, n)
			}
		}
		for kind, n := range got {
			if _, ok := want[s.String()][kind]; !ok {
				t.Errorf("service %s: %d %s live that the engine does not render", s, n, kind)
			}
		}
	}

	if res.DecodeBefore != 2 || res.DecodeAfter != upgradeReplicas || res.DecodeReady != upgradeReplicas || !res.UpgradedReady {
		t.Errorf("upgrade: decode replicas %d -> %d (%d ready), service Ready again %t; want 2 -> %d, all ready",
			res.DecodeBefore, res.DecodeAfter, res.DecodeReady, res.UpgradedReady, upgradeReplicas)
	}
	// The demo, not the HPA controller, wrote the HPA's decision: the
	// scale's spec.replicas is the demo's field manager's alone, and the
	// line says it is the demo's write.
	if res.ScaledBefore != 2 || res.ScaledAfter != autoscaleReplicas || !res.ScaledGenerationKept || !slices.Equal(res.ScaledReplicasOwners, []string{demoScaleManager}) {
		t.Errorf("autoscale: replicas %d -> %d, Deployment not written by the controller %t, spec.replicas owned by %v; want 2 -> %d, true, [%s] (the demo's write, not %s's)",
			res.ScaledBefore, res.ScaledAfter, res.ScaledGenerationKept, res.ScaledReplicasOwners, autoscaleReplicas, demoScaleManager, hpaControllerManager)
	}
	if want := "(the demo's write: field manager " + demoScaleManager + ", not the HPA controller's " + hpaControllerManager + ")"; !strings.Contains(out.String(), want) {
		t.Errorf("the HPA step's output does not say the scale is the demo's write: it lacks %q", want)
	}
	if hostErr == nil {
		if !res.Webhooks {
			t.Error("this machine can route to itself, yet the demo ran without webhooks")
		}
		checkMaaS(t, res.MaaS, out.String())
	} else if res.Webhooks || res.MaaS != nil {
		t.Errorf("with no routable host address the demo reports webhooks %t, MaaS %v; want neither", res.Webhooks, res.MaaS)
	}
	checkAuth(t, res.Auth)
	checkGPU(t, res.GPU)
	checkLeaderWorkerSet(t, out.String(), res.Requests)
	// The HPA's desired count; its current one is 2 as the demo writes it,
	// or 4 once the HPA controller has reported the scale.
	if !regexp.MustCompile(`hpa/qwen-hpa:[24]/4 `).MatchString(out.String()) {
		t.Error("the output lacks the HPA's counts hpa/qwen-hpa:2/4 or :4/4")
	}
	for _, line := range []string{"1/17 Build", "3/17 helm install", "7/17 Watch", "8/17 Requests", "9/17 The move", "10/17 Auth at the gateway",
		"12/17 Autoscale", "13/17 Models-as-a-Service", "14/17 GPU services", "15/17 Fix big", "16/17 Delete big", "17/17 Tear down",
		"dual", "kwok-gpu-0   NVIDIA-H100-80GB-HBM3", "0/6 nodes are available: ", "demo done in"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the output lacks %q", line)
		}
	}
	if skip != "" && !t.Failed() {
		t.Skip(skip)
	}
}

// loopbackOnlyEnv set makes TestIntegrationDemo run the demo as on a
// machine whose only address is loopback (config.LoopbackOnly), to see
// what such a machine leaves out.
const loopbackOnlyEnv = "DEMO_LOOPBACK_ONLY"

// coverageGap says what the demo test does when hostErr says this machine
// has no address the API server can reach: the demo then runs without the
// webhooks and without Models-as-a-Service. Under CI that is a failure
// (fatal); elsewhere the test skips when the rest passed, naming what was
// left out (skip). Both are "" when the machine has an address.
func coverageGap(hostErr error, ci bool) (skip, fatal string) {
	if hostErr == nil {
		return "", ""
	}
	left := fmt.Sprintf("no routable host address (%v), so the demo runs without the validating and conversion webhooks "+
		"(both charts with webhook.enabled=false, the controller with --disable-webhooks) and without Models-as-a-Service "+
		"(no MaaS API server; step 13 skipped)", hostErr)
	if ci {
		return "", left + "; CI is set, and CI must cover them: give the machine an address besides loopback"
	}
	return left + "; the other steps passed", ""
}

// checkAuth: through the test gateway enforcing the chart's default deny
// and the route's AuthPolicy, a
// request without a token was refused (401) and one with a token of a
// ServiceAccount granted get on the service was answered by one of its
// pods.
func checkAuth(t *testing.T, a *authOutcome) {
	t.Helper()
	if a == nil {
		t.Fatal("the demo did not reach the auth step")
	}
	if !strings.HasSuffix(a.Policy, "/"+authService+"-kserve-route-authn") || a.Without != 401 || a.With != 200 || !strings.HasPrefix(a.Pod, authService+"-") {
		t.Errorf("auth: %+v; want the route's AuthPolicy <namespace>/%s-kserve-route-authn, 401 without a token, 200 from a pod of %s with one", a, authService, authService)
	}
}

// checkLeaderWorkerSet: deepseek's LeaderWorkerSet ran (the LWS operator
// in step 3): its leader and worker pods are in the nodes tables, and the
// leader, the only pod of its InferencePool, answered deepseek's requests.
func checkLeaderWorkerSet(t *testing.T, out string, ro *requestsOutcome) {
	t.Helper()
	for _, pod := range []string{"deepseek-kserve-mn-0", "deepseek-kserve-mn-0-1"} {
		if !regexp.MustCompile(`(?m)[ :,] ` + pod + `(,|$)`).MatchString(out) {
			t.Errorf("no nodes table lists deepseek's LeaderWorkerSet pod %s", pod)
		}
	}
	if ro == nil {
		return // checkRequests failed
	}
	if spread := ro.Spread["demo/deepseek"]; len(spread) != 1 || spread["deepseek-kserve-mn-0"] == 0 {
		t.Errorf("deepseek's concurrent requests were answered by %v, want its leader pod deepseek-kserve-mn-0", spread)
	}
}

// checkGPU: qwen-gpu's two pods ran on GPU nodes with 2 GPUs each (tensor
// parallel 2); big was not Ready for lack of GPUs, in the scheduler's
// words, then Ready on 8 GPUs; deleting it removed its Deployments,
// ReplicaSets and Pods.
func checkGPU(t *testing.T, g *gpuOutcome) {
	t.Helper()
	if g == nil {
		t.Fatal("the demo did not reach the GPU steps")
	}
	if len(g.GPUPods) != 2 {
		t.Errorf("qwen-gpu pods Running on GPU nodes: %v, want 2", g.GPUPods)
	}
	for name, n := range g.GPUPods {
		if n != 2 {
			t.Errorf("pod %s requests %d GPUs, want 2 (tensor parallel 2)", name, n)
		}
	}
	if !strings.Contains(g.Unschedulable, "Unschedulable: 0/6 nodes are available: ") || !strings.Contains(g.Unschedulable, "Insufficient nvidia.com/gpu") {
		t.Errorf("big's Ready message before the fix: %q; want the scheduler's Unschedulable message", g.Unschedulable)
	}
	if !g.FixedReady {
		t.Error("big was not Ready on 8 GPUs of a GPU node after the fix")
	}
	if g.Collected["Deployment"] == 0 || g.Collected["ReplicaSet"] == 0 || g.Collected["Pod"] == 0 {
		t.Errorf("before the deletion big had %v; want Deployments, ReplicaSets and Pods", g.Collected)
	}
	for kind, n := range g.Left {
		if n != 0 {
			t.Errorf("%d %s of big left after its deletion", n, kind)
		}
	}
}

// checkMaaS: alice (premium) lists qwen (premium) and llama-pd (every
// tier), bob (free) only llama-pd, deepseek (enterprise) neither; alice's
// token is a premium ServiceAccount's, which may post to qwen and llama-pd
// and not to deepseek.
func checkMaaS(t *testing.T, m *maasOutcome, out string) {
	t.Helper()
	if m == nil {
		t.Fatal("this machine can route to itself, yet the demo skipped MaaS")
	}
	want := map[string][]string{"alice": {"demo/llama-pd", "demo/qwen"}, "bob": {"demo/llama-pd"}}
	for user, models := range want {
		got := slices.Sorted(slices.Values(m.Models[user]))
		if !slices.Equal(got, models) {
			t.Errorf("%s lists models %v, want %v", user, got, models)
		}
	}
	if m.TokenTier != "premium" || m.TokenUser != "system:serviceaccount:maas-default-gateway-tier-premium:alice-2bd806c97f0e00af" {
		t.Errorf("alice's token: tier %q, authenticates as %q; want premium, her ServiceAccount in the premium tier's namespace", m.TokenTier, m.TokenUser)
	}
	for svc, allowed := range map[string]bool{"demo/qwen": true, "demo/llama-pd": true, "demo/deepseek": false} {
		if m.MayPost[svc] != allowed {
			t.Errorf("alice's token may post to %s: %v, want %v", svc, m.MayPost[svc], allowed)
		}
	}
	// The RoleBinding named for each allowed call was found and checked
	// (checkGrant); a denied call has none.
	wantBindings := map[string]string{"demo/qwen": "qwen-model-user-premium", "demo/llama-pd": "llama-pd-model-user-premium"}
	if !maps.Equal(m.Bindings, wantBindings) {
		t.Errorf("the RoleBindings found to allow alice's token: %v, want %v", m.Bindings, wantBindings)
	}
	if want := "the demo's own SubjectAccessReview"; !strings.Contains(out, want) {
		t.Errorf("the MaaS step's output does not call the SubjectAccessReview the demo's own: it lacks %q", want)
	}
	if strings.Contains(out, "the gateway's SubjectAccessReview") {
		t.Error("the MaaS step's output calls the demo's SubjectAccessReview the gateway's")
	}
}

// renderedKinds renders the demo's services offline at phase v1 and counts
// each one's objects by kind, named as the demo's summary names them.
func renderedKinds(t *testing.T, root, bin string, services []serviceRef, maas bool) map[string]map[string]int {
	t.Helper()
	input := filepath.Join(t.TempDir(), "services.yaml")
	var tiers []byte
	if maas {
		tiers = tierConfigMap(t, root)
	}
	if err := os.WriteFile(input, append(tiers, servicesManifest(t, root)...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "render", "-f", input, "--migration-phase", "v1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("render the demo's services: %v\n%s", err, stderr.String())
	}
	docs, err := manifest.Split("render", stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]map[string]bool{}
	for _, d := range docs {
		gk := d.Object.GroupVersionKind().GroupKind()
		if groups[gk.Kind] == nil {
			groups[gk.Kind] = map[string]bool{}
		}
		groups[gk.Kind][gk.Group] = true
	}
	out := map[string]map[string]int{}
	for _, s := range services {
		out[s.String()] = map[string]int{}
	}
	for _, d := range docs {
		svc := serviceRef{Namespace: "", Name: d.Object.GetLabels()["app.kubernetes.io/name"]}
		for _, s := range services {
			if s.Name == svc.Name {
				svc.Namespace = s.Namespace
			}
		}
		gk := d.Object.GroupVersionKind().GroupKind()
		label := gk.Kind
		if len(groups[gk.Kind]) > 1 {
			label = fmt.Sprintf("%s (%s)", gk.Kind, gk.Group)
		}
		out[svc.String()][label]++
	}
	return out
}

// servicesManifest turns the services of the demo's values into
// LLMInferenceService documents, as the chart renders them.
// tierConfigMap is the tier ConfigMap the chart makes from its default
// maas.tiers, so that render builds the services' tier access as the
// controller does.
func tierConfigMap(t *testing.T, root string) []byte {
	t.Helper()
	data := golden.Read(t, filepath.Join(root, chart, "values.yaml"))
	var values struct {
		MaaS struct {
			Tiers []map[string]any `json:"tiers"`
		} `json:"maas"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	// As the chart writes it: a tier's limits are the gateway's
	// (TokenRateLimitPolicy), not part of ODH's ConfigMap format.
	for _, tier := range values.MaaS.Tiers {
		delete(tier, "limits")
	}
	tiers, err := yaml.Marshal(values.MaaS.Tiers)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "tier-to-group-mapping", "namespace": systemNamespace},
		"data": map[string]any{"tiers": string(tiers)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("---\n"), doc...)
}

func servicesManifest(t *testing.T, root string) []byte {
	t.Helper()
	data := golden.Read(t, filepath.Join(root, valuesFile))
	var values struct {
		Services map[string]struct {
			Namespace   string            `json:"namespace"`
			Annotations map[string]string `json:"annotations"`
			Spec        map[string]any    `json:"spec"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(values.Services)) {
		s := values.Services[name]
		doc, err := yaml.Marshal(map[string]any{
			"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
			"metadata": map[string]any{"name": name, "namespace": s.Namespace, "annotations": s.Annotations}, "spec": s.Spec,
		})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(doc)
	}
	return b.Bytes()
}

// TestExamplesAreTheDemoServices keeps examples/*.yaml the demo's services
// (same name, namespace and spec as the values file), and examples/gpu the
// same services by name.
func TestExamplesAreTheDemoServices(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// specs maps namespace/name to the spec of every document in a stream.
	specs := func(name string, data []byte, into map[string]string) {
		docs, err := manifest.Split(name, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			spec, err := yaml.Marshal(d.Object.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			into[d.Object.GetNamespace()+"/"+d.Object.GetName()] = string(spec)
		}
	}
	want := map[string]string{}
	specs(valuesFile, servicesManifest(t, root), want)
	examples := func(glob string) map[string]string {
		files, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s: %v", glob, err)
		}
		got := map[string]string{}
		for _, f := range files {
			data := golden.Read(t, f)
			specs(f, data, got)
		}
		return got
	}
	cpu := examples("examples/*.yaml")
	for key, spec := range want {
		if cpu[key] != spec {
			t.Errorf("examples/ and %s disagree on %s:\nexample:\n%s\nvalues:\n%s", valuesFile, key, cpu[key], spec)
		}
	}
	if len(cpu) != len(want) {
		t.Errorf("examples/*.yaml hold %d services, %s %d", len(cpu), valuesFile, len(want))
	}
	names := func(m map[string]string) []string {
		var out []string
		for key := range m {
			out = append(out, key[strings.Index(key, "/")+1:])
		}
		slices.Sort(out)
		return out
	}
	if gpu := examples("examples/gpu/*.yaml"); !slices.Equal(names(gpu), names(cpu)) {
		t.Errorf("examples/gpu has services %v, examples/ %v: the GPU versions are the same services", names(gpu), names(cpu))
	}
}

// checkRequests checks steps 8 and 9: qwen's requests were chosen by GIE's
// endpoint picker and spread over both its pods, none went to the pod made
// not Ready, llama-pd's (a profile GIE's endpoint picker cannot run) by the
// pool's failureMode, and no request failed while the routes moved from
// the v1alpha2 to the v1 pool, through both.
func checkRequests(t *testing.T, ro *requestsOutcome) {
	t.Helper()
	if ro == nil {
		t.Fatal("no requests were sent")
	}
	qwen, pd := "demo/qwen", "demo/llama-pd"
	if ro.PickedBy[qwen] != gateway.PickedByEndpointPicker || len(ro.Spread[qwen]) != 2 {
		t.Errorf("qwen's %d concurrent requests: picked by %q, by pod %v; want the endpoint picker, both pods", concurrent, ro.PickedBy[qwen], ro.Spread[qwen])
	}
	if ro.PickedBy[pd] != gateway.PickedByFailOpen || len(ro.Spread[pd]) == 0 {
		t.Errorf("llama-pd's requests: picked by %q, by pod %v; want the gateway's FailOpen", ro.PickedBy[pd], ro.Spread[pd])
	}
	if ro.NotReadyPod == "" || ro.AfterNotReady[ro.NotReadyPod] != 0 || len(ro.AfterNotReady) == 0 {
		t.Errorf("after %q was made not Ready, requests went to %v", ro.NotReadyPod, ro.AfterNotReady)
	}
	if ro.LoRAPod == "" || !ro.LoRAServed {
		t.Errorf("the LoRA adapter's request was answered by pod %q, which lists it: %t", ro.LoRAPod, ro.LoRAServed)
	}
	alpha2, v1 := 0, 0
	for backend, n := range ro.Backends {
		switch {
		case strings.HasSuffix(backend, "."+build.GroupPoolV1alpha2):
			alpha2 += n
		case strings.HasSuffix(backend, "."+build.GroupPoolV1):
			v1 += n
		}
	}
	if ro.Failed != 0 || ro.Sent == 0 || alpha2 == 0 || v1 == 0 {
		t.Errorf("the move from dual to v1: %d requests, %d failed, %d through the v1alpha2 pool and %d through the v1 pool; want none failed, some through each", ro.Sent, ro.Failed, alpha2, v1)
	}
}

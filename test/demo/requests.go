package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/opendatahub-io/odh-serving/api/v1alpha2"
	"github.com/opendatahub-io/odh-serving/engine/build"
	"github.com/opendatahub-io/odh-serving/test/endpointpicker"
	"github.com/opendatahub-io/odh-serving/test/gateway"
	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/podwatch"
)

const (
	ingressGateway = "kserve-ingress-gateway"
	// concurrent is how many requests step 8 sends at once.
	concurrent = 50
	// migrationRate is the request rate, per service, during the move.
	migrationRate = 20
)

// requestsOutcome is what steps 8 and 9 showed.
type requestsOutcome struct {
	// Spread counts, by service, the pods that answered the concurrent
	// requests; PickedBy says who chose them (the test gateway's
	// PickedByHeader).
	Spread   map[string]map[string]int
	PickedBy map[string]string
	// NotReadyPod was made not Ready; AfterNotReady counts the pods that
	// answered afterwards.
	NotReadyPod   string
	AfterNotReady map[string]int
	// LoRAPod answered a request naming the LoRA adapter; LoRAServed says
	// its /v1/models lists the adapter.
	LoRAPod    string
	LoRAServed bool
	// Sent and Failed count the requests during the move from dual to
	// v1; Backends counts them by the backend the gateway chose.
	Sent, Failed int
	Backends     map[string]int
}

// target is a service as the requests see it.
type target struct {
	ref   serviceRef
	url   string
	model string
	// pods are the Ready workload pods, sorted.
	pods []string
	// unrunnable says why GIE's endpoint picker runs no process for it;
	// dropped are the plugins the adapter dropped.
	unrunnable, dropped string
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * concurrent}}

// answer is one response through the gateway.
type answer struct {
	code               int
	pod, picked, route string
	body               string
}

func (a answer) String() string {
	s := fmt.Sprintf("%d from pod %s", a.code, a.pod)
	switch a.picked {
	case gateway.PickedByEndpointPicker:
		s += " (chosen by the endpoint picker)"
	case gateway.PickedByFailOpen:
		s += " (chosen at random by the gateway: failureMode FailOpen)"
	}
	return s
}

func send(ctx context.Context, method, url, body string) (answer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: resp.StatusCode, pod: resp.Header.Get("X-Model-Server-Pod"), picked: resp.Header.Get(gateway.PickedByHeader),
		route: resp.Header.Get(gateway.BackendHeader), body: string(b)}
	if a.code != http.StatusOK {
		return a, fmt.Errorf("%s %s: %d %s", method, url, a.code, strings.TrimSpace(a.body))
	}
	return a, nil
}

func chat(ctx context.Context, t target) (answer, error) {
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Which pod are you?"}],"max_tokens":8}`, t.model)
	return send(ctx, http.MethodPost, t.url+"/v1/chat/completions", body)
}

// targets reads the demo's services: URL, model, Ready pods, and whether
// GIE's endpoint picker can run their scheduler's configuration.
func (d *demo) targets(ctx context.Context) ([]target, error) {
	var out []target
	for _, s := range d.services {
		svc := &v1alpha2.LLMInferenceService{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, svc); err != nil {
			return nil, fmt.Errorf("read service %s: %w", s, err)
		}
		t := target{ref: s, url: svc.Status.URL}
		if svc.Spec.Model.Name != nil {
			t.model = *svc.Spec.Model.Name
		}
		pods, err := d.readyPods(ctx, s)
		if err != nil {
			return nil, err
		}
		t.pods = pods
		deps := &appsv1.DeploymentList{}
		if err := d.c.List(ctx, deps, client.InNamespace(s.Namespace), client.MatchingLabels{
			partOf: "llminferenceservice", "app.kubernetes.io/name": s.Name, "app.kubernetes.io/component": "llminferenceservice-router-scheduler",
		}); err != nil {
			return nil, fmt.Errorf("list the endpoint picker of %s: %w", s, err)
		}
		for _, dep := range deps.Items {
			for _, c := range dep.Spec.Template.Spec.Containers {
				if i := slices.Index(c.Args, "--config-text"); i >= 0 && i+1 < len(c.Args) {
					a, err := endpointpicker.Adapt(c.Args[i+1])
					if err != nil {
						return nil, fmt.Errorf("service %s: %w", s, err)
					}
					t.unrunnable, t.dropped = strings.Join(a.Unrunnable, "; "), strings.Join(a.Dropped, ", ")
				}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// readyPods lists a service's Ready workload pods, sorted.
func (d *demo) readyPods(ctx context.Context, s serviceRef) ([]string, error) {
	pods := &corev1.PodList{}
	if err := d.c.List(ctx, pods, client.InNamespace(s.Namespace), client.MatchingLabels{"app.kubernetes.io/name": s.Name, "kserve.io/component": "workload"}); err != nil {
		return nil, fmt.Errorf("list the pods of %s: %w", s, err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podwatch.Ready(&p) {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// setPoolGroups sets the InferencePool groups the test gateway serves for
// the ingress Gateway (gateway.PoolGroupsAnnotation); none removes the
// annotation: both groups.
func (d *demo) setPoolGroups(ctx context.Context, groups ...string) error {
	value := "null"
	if len(groups) > 0 {
		value = fmt.Sprintf("%q", strings.Join(groups, ","))
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, gateway.PoolGroupsAnnotation, value)
	gw := &gatewayv1.Gateway{}
	gw.Namespace, gw.Name = systemNamespace, ingressGateway
	if err := d.c.Patch(ctx, gw, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("annotate Gateway %s/%s: %w", systemNamespace, ingressGateway, err)
	}
	return nil
}

// 8. Requests through the test gateway to each service's URL.
func (d *demo) requests(ctx context.Context) error {
	d.header("Requests through the test gateway to each service's URL (the routes are on the v1alpha2 pool)")
	ro := &requestsOutcome{Spread: map[string]map[string]int{}, PickedBy: map[string]string{}}
	d.out.Requests = ro
	targets, err := d.targets(ctx)
	if err != nil {
		return err
	}
	notReadyShown := false
	for _, t := range targets {
		switch {
		case len(t.pods) == 0:
			d.say("%s: no Ready model-server pod, so no request", t.ref)
			continue
		case t.unrunnable != "":
			d.say("%s %s: GIE's endpoint picker cannot run its scheduling profile (%s): no endpoint picker runs, and its InferencePool's failureMode (FailOpen) decides: the gateway sends each request to a Ready pod at random", t.ref, t.url, t.unrunnable)
		default:
			d.say("%s %s: GIE's endpoint picker runs its scheduling profile (dropped, only llm-d's endpoint picker has them: %s)", t.ref, t.url, orNone(t.dropped))
		}
		want := gateway.PickedByEndpointPicker
		if t.unrunnable != "" {
			want = gateway.PickedByFailOpen
		}
		var first answer
		err := d.poll(ctx, t.ref.String()+": a chat completion through the gateway", 300*time.Millisecond, func() (bool, error) {
			a, err := chat(ctx, t)
			first = a
			return err == nil && a.picked == want, nil
		})
		if err != nil {
			return fmt.Errorf("%w; last answer: %d %s (picked by %q)", err, first.code, strings.TrimSpace(first.body), first.picked)
		}
		models, err := send(ctx, http.MethodGet, t.url+"/v1/models", "")
		if err != nil {
			return err
		}
		var list struct {
			Data []struct{ ID string } `json:"data"`
		}
		if err := json.Unmarshal([]byte(models.body), &list); err != nil {
			return fmt.Errorf("%s/v1/models: %w", t.url, err)
		}
		var ids []string
		for _, m := range list.Data {
			ids = append(ids, m.ID)
		}
		d.say("  GET  /v1/models: %s: %s", models, strings.Join(ids, ", "))
		d.say("  POST /v1/chat/completions: %s: %s", first, content(first.body))

		spread, picked, err := d.burst(ctx, t)
		if err != nil {
			return err
		}
		ro.Spread[t.ref.String()], ro.PickedBy[t.ref.String()] = spread, picked
		d.say("  %d concurrent chat completions: %d answered, by pod: %s", concurrent, concurrent, counts(spread))

		if !notReadyShown && t.unrunnable == "" && len(t.pods) > 1 {
			notReadyShown = true
			if err := d.notReady(ctx, t, ro); err != nil {
				return err
			}
		}
	}
	return d.lora(ctx, ro)
}

// The LoRA service of step 8: qwen with an adapter, one replica.
const (
	loraService = "qwen-lora"
	loraAdapter = "sql-lora"
)

// lora deploys a service with a LoRA adapter, sends a chat completion
// naming the adapter as its model, shows the pod that answered serves it,
// and deletes the service.
func (d *demo) lora(ctx context.Context, ro *requestsOutcome) error {
	ns := d.services[0].Namespace
	svc := &v1alpha2.LLMInferenceService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: loraService},
		Spec: v1alpha2.LLMInferenceServiceSpec{
			Model: v1alpha2.LLMModelSpec{Name: ptrTo("Qwen/Qwen2.5-7B-Instruct"), LoRA: &v1alpha2.LoRASpec{
				Adapters: []v1alpha2.LoRAAdapter{{Name: ptrTo(loraAdapter), URI: "hf://yard1/llama-2-7b-sql-lora-test"}},
			}},
			WorkloadSpec: v1alpha2.WorkloadSpec{Replicas: ptrTo(int32(1))},
			BaseRefs:     []corev1.LocalObjectReference{{Name: "kserve-config-llm-cpu-simulator"}},
			Router:       &v1alpha2.RouterSpec{Route: &v1alpha2.GatewayRoutesSpec{}, Gateway: &v1alpha2.GatewaySpec{}, Scheduler: &v1alpha2.SchedulerSpec{}},
		},
	}
	if err := d.c.Create(ctx, svc); err != nil {
		return fmt.Errorf("create service %s/%s: %w", ns, loraService, err)
	}
	ref := serviceRef{Namespace: ns, Name: loraService}
	d.say("%s: qwen with the LoRA adapter %s (spec.model.lora.adapters), one replica; its endpoint picker runs the lora profile", ref, loraAdapter)
	err := d.poll(ctx, ref.String()+" Ready", 300*time.Millisecond, func() (bool, error) {
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha2.ConditionReady) && svc.Status.ObservedGeneration == svc.Generation, nil
	})
	if err != nil {
		return err
	}
	t := target{ref: ref, url: svc.Status.URL, model: loraAdapter}
	var a answer
	err = d.poll(ctx, ref.String()+": a chat completion for "+loraAdapter, 300*time.Millisecond, func() (bool, error) {
		a, err = chat(ctx, t)
		return err == nil && a.picked == gateway.PickedByEndpointPicker, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last answer: %d %s", err, a.code, strings.TrimSpace(a.body))
	}
	models, err := send(ctx, http.MethodGet, t.url+"/v1/models", "")
	if err != nil {
		return err
	}
	ro.LoRAPod, ro.LoRAServed = a.pod, strings.Contains(models.body, `"`+loraAdapter+`"`) && models.pod == a.pod
	d.say("  POST /v1/chat/completions with model %s: %s: %s", loraAdapter, a, content(a.body))
	d.say("  GET  /v1/models: %s lists %s: %t", models, loraAdapter, ro.LoRAServed)
	if err := d.c.Delete(ctx, svc); err != nil {
		return fmt.Errorf("delete service %s: %w", ref, err)
	}
	d.say("  %s deleted", ref)
	return nil
}

// burst sends concurrent chat completions at once and counts the pods
// that answered.
func (d *demo) burst(ctx context.Context, t target) (map[string]int, string, error) {
	var mu sync.Mutex
	spread := map[string]int{}
	picked := map[string]bool{}
	var errs []error
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() {
			a, err := chat(ctx, t)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			spread[a.pod]++
			picked[a.picked] = true
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("%s: %d of %d concurrent requests failed, the first: %w", t.ref, len(errs), concurrent, errs[0])
	}
	return spread, strings.Join(slices.Sorted(maps.Keys(picked)), ","), nil
}

// notReady makes a pod of t not Ready through kwok's readiness stage (a
// label, as a failing probe would), shows that it gets no more requests,
// then makes it Ready again.
func (d *demo) notReady(ctx context.Context, t target, ro *requestsOutcome) error {
	pod := t.pods[0]
	ro.NotReadyPod = pod
	if err := d.labelReadiness(ctx, t.ref.Namespace, pod, kwokcluster.ReadinessFails, false); err != nil {
		return err
	}
	d.say("  pod %s made not Ready: label %s=%s, kwok's readiness stage plays a failing probe (Ready=False)", pod, kwokcluster.ReadinessLabel, kwokcluster.ReadinessFails)
	// The endpoint picker sees the pod's status through its informer,
	// a moment later: wait for ten answers in a row from other pods.
	err := d.poll(ctx, "no request to "+pod, 200*time.Millisecond, func() (bool, error) {
		for range 10 {
			a, err := chat(ctx, t)
			if err != nil || a.pod == pod {
				return false, nil //nolint:nilerr // not yet
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	after := map[string]int{}
	for range 20 {
		a, err := chat(ctx, t)
		if err != nil {
			return err
		}
		after[a.pod]++
	}
	ro.AfterNotReady = after
	d.say("  then 20 chat completions: by pod: %s", counts(after))
	if err := d.labelReadiness(ctx, t.ref.Namespace, pod, kwokcluster.ReadinessPasses, true); err != nil {
		return err
	}
	d.say("  pod %s Ready again (label %s=%s)", pod, kwokcluster.ReadinessLabel, kwokcluster.ReadinessPasses)
	return nil
}

// labelReadiness sets the readiness label and waits until kwok made the
// pod's Ready condition follow.
func (d *demo) labelReadiness(ctx context.Context, namespace, name, value string, ready bool) error {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = namespace, name
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, kwokcluster.ReadinessLabel, value)
	if err := d.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("label pod %s/%s: %w", namespace, name, err)
	}
	return d.poll(ctx, fmt.Sprintf("pod %s/%s Ready=%t", namespace, name, ready), 100*time.Millisecond, func() (bool, error) {
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return podwatch.Ready(pod) == ready, nil
	})
}

// 9. The move from dual to v1 while requests flow.
func (d *demo) migrate(ctx context.Context) error {
	d.header(fmt.Sprintf("The move from the v1alpha2 to the v1 InferencePool while requests flow (%d a second per service)", migrationRate))
	ro := d.out.Requests
	ro.Backends = map[string]int{}
	targets, err := d.targets(ctx)
	if err != nil {
		return err
	}
	var flowing []target
	for _, t := range targets {
		if len(t.pods) > 0 {
			flowing = append(flowing, t)
		}
	}
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for _, t := range flowing {
		wg.Go(func() {
			tick := time.NewTicker(time.Second / migrationRate)
			defer tick.Stop()
			var inFlight sync.WaitGroup
			defer inFlight.Wait()
			for {
				select {
				case <-loadCtx.Done():
					return
				case <-tick.C:
				}
				inFlight.Go(func() {
					// A request in flight when the load stops is finished,
					// not cancelled: it counts.
					a, err := chat(context.WithoutCancel(loadCtx), t)
					mu.Lock()
					defer mu.Unlock()
					ro.Sent++
					if err != nil {
						ro.Failed++
						if len(failures) < 5 {
							failures = append(failures, err.Error())
						}
						return
					}
					ro.Backends[a.route]++
				})
			}
		})
	}
	d.say("requests flowing to %s", serviceList(flowing))
	time.Sleep(time.Second) // some requests before the move
	if err := d.setPoolGroups(ctx); err != nil {
		return err
	}
	d.say("the gateway is upgraded: it serves v1 InferencePools too (annotation %s removed); it accepts the v1 pools, and the controller moves the routes' weights", gateway.PoolGroupsAnnotation)
	err = d.poll(ctx, "every service Ready on v1, its route's move seen by the gateway", 200*time.Millisecond, func() (bool, error) {
		states, err := d.serviceStates(ctx)
		if err != nil {
			return false, err
		}
		for _, s := range states {
			if !s.Ready || s.Phase != "v1" {
				return false, nil
			}
		}
		return d.routesMoved(ctx)
	})
	if err != nil {
		return err
	}
	d.say("[%6.1fs] every route on the v1 pool; requests flow one more second", d.elapsed().Seconds())
	time.Sleep(time.Second)
	stop()
	wg.Wait()
	states, err := d.serviceStates(ctx)
	if err != nil {
		return err
	}
	d.out.Services = states
	out, err := d.status(ctx)
	if err != nil {
		return err
	}
	d.block(out)
	d.lastStatus = out
	d.say("%d requests during the move, %d failed; by backend: %s", ro.Sent, ro.Failed, counts(ro.Backends))
	for _, f := range failures {
		d.say("  failed: %s", f)
	}
	return nil
}

// routesMoved says whether every demo service's route sends everything to
// the v1 pool, and the test gateway has reported on that generation.
func (d *demo) routesMoved(ctx context.Context) (bool, error) {
	for _, s := range d.services {
		rt := &gatewayv1.HTTPRoute{}
		if err := d.c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name + "-kserve-route"}, rt); err != nil {
			return false, fmt.Errorf("read the route of %s: %w", s, err)
		}
		for _, rule := range rt.Spec.Rules {
			for _, b := range rule.BackendRefs {
				if b.Group != nil && string(*b.Group) == build.GroupPoolV1alpha2 && b.Weight != nil && *b.Weight != 0 {
					return false, nil
				}
			}
		}
		seen := false
		for _, p := range rt.Status.Parents {
			for _, c := range p.Conditions {
				seen = seen || p.ControllerName == gateway.ControllerName && c.ObservedGeneration == rt.Generation
			}
		}
		if !seen {
			return false, nil
		}
	}
	return true, nil
}

func content(body string) string {
	var r struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Choices) == 0 {
		return strings.TrimSpace(body)
	}
	return fmt.Sprintf("%q", r.Choices[0].Message.Content)
}

func counts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}

func serviceList(ts []target) string {
	names := make([]string, 0, len(ts))
	for _, t := range ts {
		names = append(names, t.ref.String())
	}
	if len(names) == 0 {
		return "no service (none has a Ready pod)"
	}
	return andList(names)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

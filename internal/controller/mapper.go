package controller

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// builtinGroups are API groups of Kubernetes itself that the controller
// reads: served by every API server, and the same kinds for as long as
// the server runs. CRD groups (the Gateway API's and GIE's
// *.networking.k8s.io among them) are not here.
var builtinGroups = map[string]bool{
	"":                          true,
	"apps":                      true,
	"rbac.authorization.k8s.io": true,
	"autoscaling":               true,
	"coordination.k8s.io":       true,
	"apiextensions.k8s.io":      true,
}

// newRESTMapper is controller-runtime's dynamic REST mapper, with the
// mappings of built-in kinds remembered once it has answered them.
//
// Why: the cache asks the mapper whether a kind is namespaced on every Get
// and List, and the dynamic mapper answers by asking the mapper of every
// API group it knows in turn, each allocating a NoMatch error unless the
// group has the kind: about a fifth of all the controller allocated at
// 1,000 services, garbage that piles up while a collection runs. Kinds of
// CRDs still go to the dynamic mapper every time: their CRDs come and go,
// and discovery may lag behind them.
func newRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("create the REST mapper for %s: %w", cfg.Host, err)
	}
	return &builtinMappings{RESTMapper: m, known: map[schema.GroupVersionKind]meta.RESTMapping{}}, nil
}

type builtinMappings struct {
	meta.RESTMapper

	mu    sync.RWMutex
	known map[schema.GroupVersionKind]meta.RESTMapping
}

func (m *builtinMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 || !builtinGroups[gk.Group] {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	m.mu.RLock()
	known, ok := m.known[gvk]
	m.mu.RUnlock()
	if ok {
		return &known, nil // a copy: callers may change theirs
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err // as the dynamic mapper gave it: callers look for NoMatch errors
	}
	m.mu.Lock()
	m.known[gvk] = *mapping
	m.mu.Unlock()
	return mapping, nil
}

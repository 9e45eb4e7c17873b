# odh-serving. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

BIN          := $(CURDIR)/bin
TOOLS        := $(BIN)/tools
GOLANGCI_LINT_VERSION := v2.6.2
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT   := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)
FUZZTIME     ?= 30s
# -ldflags=-w links the test binaries without DWARF (a debugger's tables;
# stack traces and profiles do not need them): a fifth less CPU per link,
# and make test links about 50 of them (2 to 3 s less each of the big ones).
TEST_BUILD_FLAGS := -ldflags=-w
GO_TEST_FLAGS ?= -count=1 -shuffle=on $(TEST_BUILD_FLAGS)

# Everything make compiles (tests, tools, the demo, the image) is static and
# path-free, as the image must be, so the Go build cache serves each build
# from the others: `make test` after `make image` recompiles no dependency.
# test-race sets CGO_ENABLED=1 (the race detector needs cgo).
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

# One version for the binary, the image and both charts: the VERSION file, or
# `git describe` when there is none. `make verify` fails when the charts drift.
VERSION      := $(shell cat VERSION 2>/dev/null || git describe --tags --always --dirty 2>/dev/null | sed 's/^v//' || echo dev)
COMMIT       := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG  := github.com/opendatahub-io/odh-serving/internal/version
LDFLAGS      := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)

# The controller image: `make image` writes an OCI layout archive (linux/amd64
# and linux/arm64) and its SPDX SBOM here; see docs/image.md.
IMAGE_REPO    ?= quay.io/opendatahub/odh-serving
IMAGE_DIR     := $(BIN)/image
IMAGE_ARCHIVE := $(IMAGE_DIR)/odh-serving-$(VERSION).oci.tar

# What the tests run (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, kwok, the LeaderWorkerSet operator, helm, helm 4,
# kustomize and GIE's endpoint picker), built from the Go module proxy once
# and reused; see hack/setup-test-assets.sh.
ASSETS = $(shell bash hack/setup-test-assets.sh)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Main

.PHONY: render-example
render-example: build ## Render the example services offline (the quick look at what odh-serving makes): CPU ones and their GPU versions.
	$(BIN)/odh-serving render $(addprefix -f ,$(sort $(wildcard examples/*.yaml examples/gpu/*.yaml)))

# -ldflags=-w (no DWARF) links the driver with about a third less CPU;
# demo-down passes the same flags, so it runs the driver go run cached.
.PHONY: demo
demo: ## Run the platform locally: a cluster with kwok's simulated GPU nodes, charts with helm, the controller, CPU and GPU services, the test gateway (DEMO_KEEP=1 keeps it).
	go run -ldflags=-w ./test/demo

.PHONY: demo-down
demo-down: ## Stop what `DEMO_KEEP=1 make demo` left running.
	go run -ldflags=-w ./test/demo down

.PHONY: build
build: ## Build bin/odh-serving and bin/odh-serving-render (render and post-render only: Helm's post-renderer, starts in a few ms).
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/odh-serving ./cmd/odh-serving
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/odh-serving-render ./cmd/odh-serving-render

.PHONY: image
image: ## Build the controller image (IMAGE_REPO, tag VERSION) for linux/amd64 and arm64 without a container engine: bin/image/*.oci.tar and its SPDX SBOM.
	go run ./hack/image -repo $(IMAGE_REPO) -version $(VERSION) -commit $(COMMIT) -ldflags "-s -w $(LDFLAGS)" -out $(IMAGE_DIR)

HELM ?= helm

.PHONY: install-plugin
install-plugin: ## Install the Helm 4 post-renderer plugin: helm --post-renderer odh-serving (HELM=... for another helm 4).
	go build -ldflags "$(LDFLAGS)" -o plugin/odh-serving/bin/odh-serving-render ./cmd/odh-serving-render
	$(HELM) plugin uninstall odh-serving >/dev/null 2>&1 || true
	$(HELM) plugin install plugin/odh-serving

.PHONY: lint-presets
lint-presets: build ## Lint every shipped preset: render into sample topologies, check against the real CRD schemas.
	$(BIN)/odh-serving presets lint --preset-prefix= presets/*/preset.yaml

##@ Development

.PHONY: generate
generate: ## Generate deep-copy code, the serving.kserve.io CRDs (and their schemas for offline validation) and the api-server's OpenAPI definitions from api/.
	go tool controller-gen object paths=./api/...
	go tool controller-gen crd:crdVersions=v1 'paths=./api/v1alpha1/...;./api/v1alpha2/...' output:crd:dir=./api/crds
	go run ./hack/crdschemas
	go tool openapi-gen --output-dir internal/apiserver/openapi --output-pkg github.com/opendatahub-io/odh-serving/internal/apiserver/openapi \
		--output-file zz_generated.openapi.go --go-header-file hack/boilerplate.go.txt --report-filename internal/apiserver/openapi/api-rule-violations.list \
		k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version ./api/modelserving/v1alpha1

.PHONY: sync-crds
sync-crds: ## Copy the GIE, Gateway API and LWS CRDs from the pinned Go modules.
	bash hack/sync-crds.sh

.PHONY: chart-sync
chart-sync: ## Set both charts' version and appVersion from VERSION; copy the presets, images.yaml and the CRDs into charts/ (make verify fails on drift).
	bash hack/chart-sync.sh

DIST := $(CURDIR)/dist

.PHONY: package
package: test-assets ## Package both charts as dist/odh-serving{,-crds}-$(VERSION).tgz with helm package, then helm lint the archives.
	mkdir -p $(DIST)
	rm -f $(DIST)/odh-serving-*.tgz
	$(ASSETS)/helm package charts/odh-serving-crds charts/odh-serving --destination $(DIST) --version $(VERSION) --app-version $(VERSION)
	$(ASSETS)/helm lint --strict $(DIST)/odh-serving-crds-$(VERSION).tgz $(DIST)/odh-serving-$(VERSION).tgz

.PHONY: chart-lint
chart-lint: test-assets ## helm lint both charts with each of their ci/*-values.yaml.
	for f in charts/*/ci/*-values.yaml; do $(ASSETS)/helm lint --strict "$${f%/ci/*}" -f "$$f"; done

.PHONY: verify
verify: ## Fail if generated code, CRDs, the charts' copies, formatting or go.mod drift from the sources, or the README's layout table or docs/demo.md's steps from the code (hack/doccheck).
	bash hack/verify.sh

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: $(GOLANGCI_LINT) $(ACTIONLINT) ## Run golangci-lint (v2, explicit linter list in .golangci.yml) and actionlint on .github/workflows.
	$(GOLANGCI_LINT) run ./...
	$(ACTIONLINT) .github/workflows/*.yaml

$(GOLANGCI_LINT):
	mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/golangci-lint $@

# actionlint runs shellcheck on the run: scripts when shellcheck is on PATH.
$(ACTIONLINT):
	mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mv $(TOOLS)/actionlint $@

##@ Test

.PHONY: test-assets
test-assets: ## Build etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok, lws-controller, helm, helm 4, kustomize and epp into bin/ (once; reuses matching ones).
	@bash hack/setup-test-assets.sh >/dev/null

# What the tests install is what a user gets: the image archive, the
# packaged charts and bin/'s binaries, which the packages that run
# odh-serving copy rather than each link their own (testenv.BuildCommand).
TEST_ENV = ODH_SERVING_IMAGE_ARCHIVE=$(IMAGE_ARCHIVE) ODH_SERVING_DIST=$(DIST) ODH_SERVING_BIN=$(BIN) KUBEBUILDER_ASSETS=$(ASSETS) PATH="$(ASSETS):$$PATH"

# The longest test packages, longest first: make test (like go test) starts
# packages in the order they are named (./... adds the rest, each once),
# TEST_JOBS of them at a time (default: the number of CPUs, 2 here), so
# these start first rather than late, and the short ones fill the other slot.
LONG_TEST_PKGS := ./test/controller ./test/chart ./test/demo ./test/requests ./test/badinput
TEST_PKGS    ?= $(LONG_TEST_PKGS) ./...

# make test runs hack/testrun, not go test: it keeps the linked test binaries
# in TEST_BIN_DIR (about 2.5 GB for all 50) and links again only those whose
# code changed, where go test links all 50 on every run (about 120 s of CPU).
# TEST_FLAGS go to every test binary, spelt -test.NAME:
#   make test TEST_FLAGS='-test.run=TestX -test.v' TEST_JOBS=3 TEST_PKGS=./engine/...
TEST_BIN_DIR ?= $(BIN)/test
TEST_JOBS    ?=
TEST_FLAGS   ?=

.PHONY: test
test: test-assets image package build ## Run every test: unit tests, the image, and integration tests against a real kube-apiserver that install the packaged charts. Keeps the test binaries in bin/test and relinks only changed ones (TEST_FLAGS='-test.run=X -test.v', TEST_JOBS=3, TEST_PKGS=./engine/...).
	$(TEST_ENV) go run ./hack/testrun -o $(TEST_BIN_DIR) -build '$(TEST_BUILD_FLAGS)' $(if $(TEST_JOBS),-p $(TEST_JOBS)) $(TEST_PKGS) $(TEST_FLAGS)

.PHONY: test-unit
test-unit: ## Run the unit tests only (no control plane).
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /test/)

# Every fuzz target as package:Target; `go test -fuzz` takes one at a time.
FUZZ_TARGETS := ./api/v1alpha1:FuzzRoundTrip ./engine:FuzzRender ./engine/merge:FuzzMerge \
	./engine/template:FuzzTemplate ./engine/manifest:FuzzDecodeStream \
	./engine/manifest:FuzzSplitMatchesYAMLv3 ./test/chartvalues:FuzzValuesToServices

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each, in turn (default 30s; make fuzz FUZZTIME=10m).
	@for t in $(FUZZ_TARGETS); do \
		echo "=== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		go test "$${t%%:*}" -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

.PHONY: fuzz-smoke
fuzz-smoke: ## The CI smoke pass: every fuzz target for 30s.
	$(MAKE) fuzz FUZZTIME=30s

.PHONY: test-race
test-race: test-assets ## Run the engine and controller tests (unit and envtest) with the race detector.
	CGO_ENABLED=1 KUBEBUILDER_ASSETS=$(ASSETS) PATH="$(ASSETS):$$PATH" go test -race $(GO_TEST_FLAGS) ./engine/... $(if $(wildcard internal/controller/*.go),./internal/controller/... ./test/controller/...)

.PHONY: bench
bench: ## Run the Go benchmarks (record results in docs/benchmarks.md).
	go test -run '^$$' -bench . -benchmem -count 5 ./engine/...

.PHONY: bench-controller
bench-controller: test-assets ## Converge 100, 500 and 1,000 prefill/decode services with the controller (its own process) against the local API server, and 200 services with 8 workers on the cluster until Ready (record in docs/benchmarks.md).
	KUBEBUILDER_ASSETS=$(ASSETS) PATH="$(ASSETS):$$PATH" go test ./test/controller/ -run '^$$' -bench '^Benchmark(Converge|ScaleConcurrentReconciles)$$' -benchtime 1x -timeout 50m

.PHONY: bench-apiserver
bench-apiserver: test-assets ## List models (kubectl get models -A) through the local API server with 1,000 published services and 20 tiers: p50, p90 and the api-server's own API requests per list (record in docs/benchmarks.md).
	KUBEBUILDER_ASSETS=$(ASSETS) PATH="$(ASSETS):$$PATH" go test ./test/apiserver/ -run '^$$' -bench '^BenchmarkListModels$$' -benchtime 2000x -count 5

.PHONY: update-golden
update-golden: test-assets image package build ## Rewrite the golden files under testdata/ from the current output: fails naming each file it rewrote (review the diff, then make test); refused when CI is set.
	$(TEST_ENV) go test ./... -update

# edge-mc: run `make help` for the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Clean clones need nothing from the checksum database for kcp's and Kubernetes' modules (go.sum
# pins every hash); adding or upgrading a dependency does.
export GONOSUMDB ?= github.com/kcp-dev,k8s.io
export GOTOOLCHAIN ?= local

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
GO ?= go
GOFLAGS_TOOLS := -mod=mod

# Pinned tool versions: they must match the go.mod files under hack/tools (see shared DESIGN.md).
KCP_VERSION := v0.31.2
# kcp's kubectl plugins are not served by the module proxy past v0.27.1 (docs/development.md).
KCP_CLI_VERSION := v0.27.1
# The Kubernetes release kcp $(KCP_VERSION) is built on; the edge clusters' control planes match it.
KCP_KUBE_VERSION := v1.35.1
KUBE_VERSION := v1.35.1
KWOK_VERSION := v0.7.0
CONTROLLER_TOOLS_VERSION := v0.20.1

KCP := $(BIN)/kcp
KCP_FRONT_PROXY := $(BIN)/kcp-front-proxy
CACHE_SERVER := $(BIN)/cache-server
APIGEN := $(BIN)/apigen
KUBECTL_WS := $(BIN)/kubectl-ws
KUBECTL_KCP := $(BIN)/kubectl-kcp
CONTROLLER_GEN := $(BIN)/controller-gen
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
KUBE_SCHEDULER := $(BIN)/kube-scheduler
KWOK := $(BIN)/kwok

TOOLS := $(KCP) $(KCP_FRONT_PROXY) $(CACHE_SERVER) $(APIGEN) $(KUBECTL_WS) $(KUBECTL_KCP) $(CONTROLLER_GEN) \
	$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KWOK)

# The version kcp's servers report, set as kcp's own Makefile sets it: <Kubernetes>+kcp-<kcp>.
KCP_GIT_VERSION := $(KCP_KUBE_VERSION)+kcp-$(KCP_VERSION)
KCP_LDFLAGS := $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version, \
	-X $(p).gitVersion=$(KCP_GIT_VERSION) -X $(p).gitMajor=1 \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$(KCP_KUBE_VERSION))) -X $(p).gitTreeState=clean)
KUBE_LDFLAGS := $(foreach p,k8s.io/client-go/pkg/version k8s.io/component-base/version, \
	-X $(p).gitVersion=$(KUBE_VERSION) -X $(p).gitMajor=1 \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) -X $(p).gitTreeState=clean)

# build_tool MODULE_DIR PACKAGE OUTPUT DESCRIPTION [LDFLAGS]
define build_tool
	@echo ">> building $(notdir $(3)) ($(4)) from hack/tools/$(1); a cold build takes minutes"
	@start=$$(date +%s); cd hack/tools/$(1) && GOFLAGS=$(GOFLAGS_TOOLS) $(GO) build -ldflags "$(5)" -o $(3) $(2); \
		echo "   built $(notdir $(3)) in $$(( $$(date +%s) - start ))s"
endef

##@ Setup

.PHONY: tools
tools: $(TOOLS) ## Build the pinned tools into bin/ (kcp, kcp plugins, codegen, Kubernetes control plane, kwok); a no-op when current.
	@echo ">> tools are current in bin/"

$(KCP): hack/tools/kcp/go.mod hack/tools/kcp/go.sum
	$(call build_tool,kcp,github.com/kcp-dev/kcp/cmd/kcp,$@,kcp $(KCP_VERSION),$(KCP_LDFLAGS))
$(KCP_FRONT_PROXY): hack/tools/kcp/go.mod hack/tools/kcp/go.sum
	$(call build_tool,kcp,github.com/kcp-dev/kcp/cmd/kcp-front-proxy,$@,kcp $(KCP_VERSION),$(KCP_LDFLAGS))
$(CACHE_SERVER): hack/tools/kcp/go.mod hack/tools/kcp/go.sum
	$(call build_tool,kcp,github.com/kcp-dev/kcp/cmd/cache-server,$@,kcp $(KCP_VERSION),$(KCP_LDFLAGS))
$(APIGEN): hack/tools/kcp/go.mod hack/tools/kcp/go.sum
	$(call build_tool,kcp,github.com/kcp-dev/sdk/cmd/apigen,$@,kcp apigen $(KCP_VERSION))
$(KUBECTL_WS): hack/tools/cli/go.mod hack/tools/cli/go.sum
	$(call build_tool,cli,github.com/kcp-dev/kcp/cli/cmd/kubectl-ws,$@,kcp cli $(KCP_CLI_VERSION))
$(KUBECTL_KCP): hack/tools/cli/go.mod hack/tools/cli/go.sum
	$(call build_tool,cli,github.com/kcp-dev/kcp/cli/cmd/kubectl-kcp,$@,kcp cli $(KCP_CLI_VERSION))
$(CONTROLLER_GEN): hack/tools/codegen/go.mod hack/tools/codegen/go.sum
	$(call build_tool,codegen,sigs.k8s.io/controller-tools/cmd/controller-gen,$@,controller-tools $(CONTROLLER_TOOLS_VERSION))
$(KUBE_APISERVER): hack/tools/kube/go.mod hack/tools/kube/go.sum
	$(call build_tool,kube,k8s.io/kubernetes/cmd/kube-apiserver,$@,Kubernetes $(KUBE_VERSION),$(KUBE_LDFLAGS))
$(KUBE_CONTROLLER_MANAGER): hack/tools/kube/go.mod hack/tools/kube/go.sum
	$(call build_tool,kube,k8s.io/kubernetes/cmd/kube-controller-manager,$@,Kubernetes $(KUBE_VERSION),$(KUBE_LDFLAGS))
$(KUBE_SCHEDULER): hack/tools/kube/go.mod hack/tools/kube/go.sum
	$(call build_tool,kube,k8s.io/kubernetes/cmd/kube-scheduler,$@,Kubernetes $(KUBE_VERSION),$(KUBE_LDFLAGS))
$(KWOK): hack/tools/kwok/go.mod hack/tools/kwok/go.sum
	$(call build_tool,kwok,sigs.k8s.io/kwok/cmd/kwok,$@,kwok $(KWOK_VERSION))

##@ Build

# edge-mc's version, which every command's --version prints and each syncer reports in its
# SyncerConfig: the tag of a release, `git describe` between releases, "dev" outside a git clone.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
endif
# The repository the image layouts name their images in (<IMAGE_REPO>/<command>:<VERSION>), and
# the one kubectl edge prep-for-syncer of a release takes the syncer's image from. PUSH=<registry>
# pushes there instead.
IMAGE_REPO ?= ghcr.io/kcp-dev/edge-mc
VERSION_LDFLAGS := -X github.com/kcp-dev/edge-mc/pkg/version.Version=$(VERSION) \
	-X github.com/kcp-dev/edge-mc/pkg/version.ImageRepo=$(IMAGE_REPO)

.PHONY: version
version: ## Print VERSION, the version that make build, images and release give edge-mc.
	@echo $(VERSION)

# make build, the e2e tests and make binaries compile alike (no cgo, no build paths, as a release
# is built), so that each compiles only what another has not: the e2e run's install and ship
# tests build the release for this machine's platform from the build cache, where with cgo and
# build paths they compiled every package again (524 s and 416 s of a run on a fresh machine).
.PHONY: build
build: ## Build edge-mc's binaries into bin/ (kubectl-edge, edge-controller-manager, edge-syncer), at VERSION.
	@echo ">> building kubectl-edge, edge-controller-manager and edge-syncer $(VERSION) into bin/"
	@start=$$(date +%s); CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/ ./cmd/...; echo "   built in $$(( $$(date +%s) - start ))s"

# Where make binaries, images and release write; tests point it at a directory of their own.
OUTPUT ?= $(ROOT)/_output
# The platforms of make binaries, images and release: edge clusters are often arm64.
PLATFORMS ?= linux/amd64 linux/arm64
PUSH ?=
# The images' creation time and that of every file in them: the last commit's, so that the same
# commit makes the same image digests.
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
endif
# Static, stripped and reproducible: no cgo, no build paths (Go's build ID depends only on the inputs).
RELEASE_LDFLAGS := -s -w $(VERSION_LDFLAGS)

.PHONY: binaries
binaries: ## Static binaries of the three commands for each of PLATFORMS (linux/amd64 linux/arm64) into _output/bin/<os>_<arch>/ (OUTPUT= moves _output).
	@for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		echo ">> building kubectl-edge, edge-controller-manager and edge-syncer $(VERSION) for $$os/$$arch into $(OUTPUT)/bin/$${os}_$${arch}/"; \
		start=$$(date +%s); \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" -o $(OUTPUT)/bin/$${os}_$${arch}/ ./cmd/...; \
		echo "   built in $$(( $$(date +%s) - start ))s"; \
	done

.PHONY: images
images: binaries ## OCI image layouts of edge-syncer and edge-controller-manager for PLATFORMS into _output/images/, no container engine needed; PUSH=<registry> pushes them as <registry>/<command>:VERSION.
	$(GO) run ./hack/images build --bin-dir $(OUTPUT)/bin --out $(OUTPUT)/images --version $(VERSION) \
		--repository $(IMAGE_REPO) --platforms "$(PLATFORMS)" --created $(SOURCE_DATE_EPOCH)
ifneq ($(PUSH),)
	$(GO) run ./hack/images push --dir $(OUTPUT)/images --registry $(PUSH) --version $(VERSION)
endif

# Where the release's files would be downloaded from, for the krew manifest of kubectl edge.
RELEASE_URL ?= https://github.com/kcp-dev/edge-mc/releases/download/$(VERSION)

.PHONY: release
release: images ## What a release would upload, into _output/release/: binaries (PLATFORMS) in archives, SHA256SUMS, the image layouts, the manifests, a krew manifest; nothing is published.
	$(GO) run ./hack/release --version $(VERSION) --bin-dir $(OUTPUT)/bin --images $(OUTPUT)/images \
		--out $(OUTPUT)/release --image-repo $(IMAGE_REPO) --platforms "$(PLATFORMS)" --url $(RELEASE_URL) \
		--created $(SOURCE_DATE_EPOCH)

##@ Code generation

.PHONY: codegen
codegen: $(CONTROLLER_GEN) $(APIGEN) ## Regenerate deepcopy, CRDs, APIResourceSchemas and APIExports.
	hack/codegen.sh

.PHONY: verify-codegen
verify-codegen: $(CONTROLLER_GEN) $(APIGEN) ## Fail if anything generated is out of date.
	hack/verify-codegen.sh

##@ Checks

.PHONY: lint
lint: ## go vet and gofmt.
	$(GO) vet ./...
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/tools/') 2>/dev/null); \
		if [ -n "$$bad" ]; then echo "not gofmt-clean:"; echo "$$bad"; exit 1; fi
	@echo ">> go vet and gofmt are clean"

.PHONY: check-monitoring
check-monitoring: ## promtool check rules config/monitoring/alerts.yaml, if promtool is on the PATH (Debian: apt-get install prometheus); the Go tests check the dashboard.
	@if command -v promtool >/dev/null 2>&1; then promtool check rules config/monitoring/alerts.yaml; \
		else echo ">> check-monitoring skipped: promtool is not on the PATH (Debian's prometheus package has it)"; fi

.PHONY: test-unit
test-unit: lint verify-codegen check-monitoring unit ## The fast tier, no server needed: lint, codegen drift, the shipped alert rules (promtool, where installed), and the unit tests with the race detector (fuzz targets run on their seed inputs).

.PHONY: unit
unit: ## Unit tests alone (no servers needed) with the race detector, the test harness's own, and the workload-kinds schema generator.
	$(GO) test -race $$($(GO) list ./... | grep -v /test/)
	$(GO) test -race -short ./test/framework/
	cd hack/tools/kube && GOFLAGS=$(GOFLAGS_TOOLS) $(GO) test ./workload-crds/

# FUZZTIME is how long test-fuzz runs each fuzz target; docs/reliability.md has a longer run.
FUZZTIME ?= 3s

.PHONY: test-fuzz
test-fuzz: ## Every Go fuzz target under pkg/ and cmd/ for FUZZTIME (3s) each; a failing input is kept in the package's testdata/fuzz/.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

# How many e2e test packages run at a time. Most of a package's time is spent waiting (for kcp to
# start, 26 s of which 7 s of CPU; for controllers to converge; for outages and rollouts to take
# their time: outage's kcp used 18 s of CPU in 361 s), so four at a time keep two cores busy where
# go test's default, one per core, left them idle: on 3a4c9cf the e2e run took 1,366 s with four
# (the machine 80% busy), 1,491 s with three (65-77%).
E2E_PARALLEL ?= 4
# How many tests of one package run at a time (go test -parallel) among those that call
# t.Parallel, each on workspaces, mailboxes and edge clusters of its own. One: with three at a
# time the e2e run kept both cores 97-100% busy and took 3,232 s, longer than one at a time
# (docs/development.md, "How long the suite takes"): each test's fleet keeps kcp busy for as long
# as the test lasts, and tests that share the CPU last longer.
E2E_TEST_PARALLEL ?= 1
# The packages that take longest, longest first, started first so that the run does not end
# waiting on one of them alone; every other package under test/ follows. Order of b2a5dfa's run
# (2026-11-29: syncer 600 s, rollout 430, sharded 412, summarizer 310, outage 282, inventory 278,
# ...): summarizer, started 992 s into that run, ran alone for its last minute.
E2E_FIRST := ./test/e2e/syncer/ ./test/e2e/rollout/ ./test/e2e/sharded/ ./test/e2e/summarizer/ \
	./test/e2e/outage/ ./test/e2e/inventory/ ./test/e2e/syncer/assemblage/ ./test/e2e/badinput/ \
	./test/e2e/install/ ./test/e2e/crash/ ./test/bench/ ./test/e2e/ship/ ./test/e2e/security/ \
	./test/e2e/scheduler/ ./test/e2e/syncer/centeroutage/

# The e2e run's go test -json stream, kept for a look afterwards (`go run ./hack/testtimes <
# _output/e2e.json` prints its summary again).
E2E_JSON := _output/e2e.json

.PHONY: test-e2e
test-e2e: $(KCP) build ## End-to-end tests against a real kcp started by the test harness (a center per package, one edge kcp for all), E2E_PARALLEL (4) packages and E2E_TEST_PARALLEL (1) tests of a package at a time, with the commands make build put into bin/; prints each package's time at the end, longest first.
	@mkdir -p $(dir $(E2E_JSON))
	$(GO) build -o $(BIN)/ ./hack/testtimes ./hack/e2e-servers
	EDGE_E2E_COMMANDS=$(BIN) CGO_ENABLED=0 $(BIN)/e2e-servers -- $(GO) test -trimpath -json -count=1 -p $(E2E_PARALLEL) -parallel $(E2E_TEST_PARALLEL) \
		-timeout 45m $(E2E_FIRST) ./test/... 2>&1 | $(BIN)/testtimes -json-out $(E2E_JSON)

.PHONY: test-e2e-race
test-e2e-race: $(KCP) ## E2E tests of E2E_PACKAGE (./test/e2e/syncer/) with edge-mc's commands built with the race detector; a reported race fails the test.
	EDGE_E2E_RACE=1 $(GO) test -count=1 -p 1 -timeout 60m $(or $(E2E_PACKAGE),./test/e2e/syncer/)

.PHONY: screenshots
screenshots: $(KCP) build ## Run the dashboard's browser test (headless Chromium: apt-get install chromium) and save its screenshots into docs/images/dashboard-*.png, which docs/quickstart.md shows.
	$(GO) build -o $(BIN)/ ./hack/e2e-servers
	EDGE_DASHBOARD_SCREENSHOTS=$(CURDIR)/docs/images EDGE_E2E_COMMANDS=$(BIN) CGO_ENABLED=0 $(BIN)/e2e-servers -- \
		$(GO) test -trimpath -count=1 -run TestDashboard ./test/e2e/dashboard/

.PHONY: test
test: tools test-unit test-fuzz test-e2e ## Everything CI runs: lint, codegen drift, unit tests (with the race detector), short fuzz runs, e2e tests.

##@ Benchmarks

# BENCH_N sets the size of each benchmark; empty, each takes its own default: the fleet
# benchmark's destinations (300), the mailbox benchmark's SyncTargets (1000) and the scheduler
# benchmark's Locations (1000). BENCH_K is the fleet benchmark's objects per destination.
# BENCH_SHARDS is the fleet benchmark's center: 1, one kcp; 2 or more, a sharded kcp (shards,
# a cache server, a front-proxy) whose figures are also reported per shard, into
# _output/bench-shards<n>.json, so that `make bench` and `make bench BENCH_SHARDS=2`, run one
# after the other, keep both.
BENCH_N ?=
BENCH_K ?= 10
BENCH_SHARDS ?= 1
BENCH_JSON := _output/bench$(if $(filter-out 1,$(BENCH_SHARDS)),-shards$(BENCH_SHARDS)).json

.PHONY: bench
bench: $(KCP) $(if $(filter-out 1,$(BENCH_SHARDS)),$(KCP_FRONT_PROXY) $(CACHE_SERVER)) ## Fleet benchmark: BENCH_N (300) destinations with syncers and edge clusters, BENCH_K (10) objects each; fan-out, update, status, idle, memory vs. raw writes. BENCH_SHARDS=2 makes the center a sharded kcp, figures per shard. BENCH_ARGS adds flags (e.g. -no-webhook-admission).
	@mkdir -p _output
	$(GO) run ./test/bench -n $(or $(BENCH_N),300) -k $(BENCH_K) -shards $(BENCH_SHARDS) -json $(BENCH_JSON) $(BENCH_ARGS)

.PHONY: bench-mailboxes
bench-mailboxes: $(KCP) ## Mailbox controller: BENCH_N (1000) SyncTargets to MailboxReady vs. raw workspace creation, memory.
	@mkdir -p _output
	$(GO) run ./test/bench/mailboxes -n $(or $(BENCH_N),1000) -json _output/bench-mailboxes.json

.PHONY: bench-scheduler
bench-scheduler: $(KCP) ## Edge scheduler: BENCH_N (1000) SyncTargets and Locations, 100 EdgePlacements; resolve all, one label change.
	@mkdir -p _output
	$(GO) run ./test/bench/scheduler -locations $(or $(BENCH_N),1000) -placements 100 -json _output/bench-scheduler.json

.PHONY: bench-summarizer
bench-summarizer: $(KCP) ## Status summarizer: BENCH_N (300) destinations x 10 Deployments; a status storm, and single changes to the summary.
	@mkdir -p _output
	$(GO) run ./test/bench/summarizer -n $(or $(BENCH_N),300) -k 10 -json _output/bench-summarizer.json

.PHONY: bench-kcp
bench-kcp: $(KCP) ## kcp's own costs: ConfigMap creates (rate, kcp CPU per write), workspaces (rate, kcp RSS each), idle CPU. BENCH_ARGS adds e.g. "-kcp v0.28.1=/path/to/kcp -rounds 2 -profile DIR" to compare builds.
	@mkdir -p _output
	$(GO) run ./test/bench/kcpwrites -kcp $(KCP_VERSION)=$(KCP) -json _output/bench-kcp.json $(BENCH_ARGS)

.PHONY: bench-rollout
bench-rollout: $(KCP) ## Rollouts: BENCH_N (1000) destinations played by the benchmark; a maxInFlight 10% rollout vs. its ideal and vs. the same change unbounded, idle CPU while it waits.
	@mkdir -p _output
	$(GO) run ./test/bench/rollout -n $(or $(BENCH_N),1000) -json _output/bench-rollout.json

.PHONY: bench-dashboard
bench-dashboard: $(KCP) ## kubectl edge dashboard: BENCH_N (300) destinations played by the benchmark, all ready; each page's HTML size and time to serve, and its load time in headless Chromium (apt-get install chromium).
	@mkdir -p _output
	$(GO) run ./test/bench/rollout -dashboard -n $(or $(BENCH_N),300) -applied-after 0 -ready-after 1s -json _output/bench-dashboard.json $(BENCH_ARGS)

.PHONY: bench-center
bench-center: $(KCP) ## The center's controllers alone: BENCH_N (300) destinations played by the benchmark; assemblage writes/s of a fan-out and of edits vs. a plain client's writes of the same size into the same mailboxes, same run.
	@mkdir -p _output
	$(GO) run ./test/bench/rollout -center -n $(or $(BENCH_N),300) -applied-after 0 -ready-after 10s -json _output/bench-center.json $(BENCH_ARGS)

##@ Try it

# What make demo and the quickstart run: kcp (the center, and by default the edge clusters'
# home) and kcp's kubectl ws; with DEMO_KUBE=1, the Kubernetes control plane and kwok of its edge
# clusters too. Only these are built, not the rest of make tools.
DEMO_TOOLS := $(KCP) $(KUBECTL_WS)
ifeq ($(DEMO_KUBE),1)
DEMO_TOOLS += $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KWOK)
endif
# SHARDS=2 (or more): a sharded center, which needs kcp's front-proxy and cache server too.
ifneq ($(filter-out 0 1,$(or $(SHARDS),1)),)
DEMO_TOOLS += $(KCP_FRONT_PROXY) $(CACHE_SERVER)
endif

.PHONY: demo-tools
demo-tools: $(DEMO_TOOLS) ## Build only the pinned tools make demo uses: kcp and kubectl-ws (DEMO_KUBE=1: and kube-apiserver, kube-controller-manager, kube-scheduler, kwok; SHARDS=2: and kcp-front-proxy, cache-server).
	@echo ">> the demo's tools are current in bin/"

.PHONY: demo
demo: demo-tools build ## The whole system on this machine, an example workload and its status; stays up (docs/quickstart.md). DEMO_KUBE=1: real Kubernetes edges. SHARDS=2: a sharded center. Builds only what it runs.
	hack/demo.sh up

.PHONY: demo-down
demo-down: ## Stop everything make demo started; only its logs stay, in .demo/.
	hack/demo.sh down

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

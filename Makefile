# gangmap's build, test and demo targets. `make help` lists them.
#
# Go is found as $(GO) (override: make GO=/usr/local/go/bin/go ...). The scripts under hack/ call
# `go` too, so the bin directory of $(GO)'s GOROOT is put first on PATH for every recipe.

GO ?= go
GO_BIN_DIR := $(shell $(GO) env GOROOT 2>/dev/null)/bin
export PATH := $(GO_BIN_DIR):$(PATH)
GOFMT ?= $(GO_BIN_DIR)/gofmt

# Fuzz time per Fuzz* target for `make fuzz`: a duration (10s) or a count of executions (5000x).
FUZZTIME ?= 10s
# Extra flags of every fuzz run (fuzz-long sets -parallel 1).
FUZZFLAGS ?=
# Calls to the fuzz function spent minimizing each new interesting input (go test's default is
# 60s per input, which on inputs of several KB took most of a run: FuzzPlan stalled 2 minutes in
# 5, FuzzDecodeAndCompile fuzzed 28 inputs in 6 minutes; docs/reliability.md).
FUZZMINIMIZE ?= 1000x
# Packages whose Fuzz* targets `make fuzz` runs.
FUZZ_PKGS ?= ./definitions/... ./gang/... ./podgrouper/runtime/webhook/... ./podgrouper/runtime/podview/...

BIN := bin
BINARIES := gangmap gangmap-grouper

# Every recipe runs in bash with errexit, nounset and pipefail: any failing command fails the target.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
# Targets run one after the other, in the order given (test = fmt-check, vet, vuln, unit, e2e, demo, fuzz-smoke).
.NOTPARALLEL:
.DEFAULT_GOAL := help

.PHONY: help build control-plane test unit e2e kai-module kai-module-if-set kai-sum fmt-check vet vuln demo generate fuzz clean bench bench-e2e bench-scale bench-vs-kai fuzz-smoke fuzz-long

help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9][a-z0-9-]*:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## go build ./... and the binaries bin/gangmap and bin/gangmap-grouper.
	$(GO) build ./...
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

control-plane: ## Build (once, cached under ~/.cache/gangmap) kube-apiserver, etcd & co.; print their directory.
	bash hack/control-plane.sh

test: fmt-check vet vuln unit e2e demo fuzz-smoke kai-module-if-set ## fmt-check, vet, vuln, unit, e2e, the README's quickstart (make demo) and a short run of every fuzz target: what CI runs (and kai-module when KAI_SRC is set).

unit: ## Unit tests with the race detector (helm is built first, outside go test's timeout).
	bash hack/helm.sh --path >/dev/null
	$(GO) test -race ./...
	$(GO) test -C hack/modsum -race ./...

e2e: ## End-to-end tests on a real kube-apiserver and etcd (builds them first if needed).
	@# hack/control-plane.sh prints its progress on stderr (left visible) and the directory on stdout.
	assets=$$(bash hack/control-plane.sh); \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -tags e2e -count=1 -timeout 20m ./e2e/...

# A KAI Scheduler source checkout at the version kaipodgrouper/go.mod requires (v0.17.0), for the
# nested module kaipodgrouper/ (gangmap-kai-podgrouper: KAI's pod-grouper with gangmap inside).
# KAI's Go module is not served by every module proxy; the checkout is only read, through a
# go.work under .e2e/ (hack/kai-module.sh), and nothing of it is committed.
KAI_SRC ?=

kai-module: ## Build, vet and test kaipodgrouper/ against KAI_SRC (a KAI v0.17.0 checkout): bin/gangmap-kai-podgrouper; KAI_MODULE_E2E=1 adds its e2e tests.
	KAI_SRC='$(KAI_SRC)' bash hack/kai-module.sh

# KAI's module version kaipodgrouper/go.mod requires, for kai-sum.
KAI_VERSION = $(shell awk '$$1 == "github.com/kai-scheduler/KAI-scheduler" {print $$2; exit}' kaipodgrouper/go.mod)

kai-sum: ## Compute kaipodgrouper/go.sum's two lines of KAI's module from KAI_SRC's tag (hack/modsum: as the module proxy would; computed, not fetched).
	@[[ -n '$(KAI_SRC)' ]] || { echo "make kai-sum: KAI_SRC is not set: give a KAI source checkout with the tag $(KAI_VERSION)" >&2; exit 2; }
	$(GO) run -C hack/modsum . -repo '$(abspath $(KAI_SRC))' -rev '$(KAI_VERSION)' -module github.com/kai-scheduler/KAI-scheduler -gosum '$(CURDIR)/kaipodgrouper/go.sum'

kai-module-if-set:
	@if [[ -z '$(KAI_SRC)' ]]; then \
	  echo "kai-module: not built: KAI_SRC is unset, and KAI's Go module (github.com/kai-scheduler/KAI-scheduler) is not served by this module proxy; 'make kai-module KAI_SRC=<KAI v0.17.0 checkout>' builds and tests kaipodgrouper/ (gangmap-kai-podgrouper)"; \
	else \
	  KAI_SRC='$(KAI_SRC)' KAI_MODULE_E2E=1 bash hack/kai-module.sh; \
	fi

vuln: ## govulncheck on every package, at the release Go, with advisories from the module proxy (hack/vuln.sh).
	bash hack/vuln.sh

fmt-check: ## Fail, listing them, if any Go file needs gofmt.
	@files=$$($(GOFMT) -l .); \
	if [[ -n $$files ]]; then echo "gofmt needed on:"; echo "$$files"; exit 1; fi; \
	echo "gofmt: ok"

vet: ## go vet, with and without the e2e build tags.
	$(GO) vet ./...
	$(GO) vet -C hack/modsum ./...
	$(GO) vet -tags e2e ./e2e/...
	$(GO) vet -tags e2e_kai ./e2e/realkai/...

# KEEP=1: the demo keeps its control plane and grouper running, prints the kubeconfig, stops on Ctrl-C.
KEEP ?=

demo: ## The main job: a real control plane, the grouper, the example workloads and their PodGroups (KEEP=1 keeps them running).
	@# Built first, with a heartbeat: the first build compiles gangmap and the Kubernetes libraries
	@# (minutes on 2 cores) and go run would print nothing meanwhile.
	@echo "== 0. Building the demo (go build ./hack/demo; the first build takes minutes, later ones seconds)"
	@mkdir -p $(BIN)
	@t0=$$SECONDS; ( while sleep 30 >/dev/null 2>&1 </dev/null; do echo "   still building the demo ($$((SECONDS - t0))s)"; done ) & hb=$$!; \
	  trap 'kill $$hb 2>/dev/null || true' EXIT; \
	  $(GO) build -o $(BIN)/demo ./hack/demo; \
	  echo "   built in $$((SECONDS - t0))s"
	KEEP=$(KEEP) $(BIN)/demo

generate: ## Regenerate deepcopy code and the PodGroup CRD (hack/generate.sh).
	bash hack/generate.sh

fuzz: ## Run every Fuzz* target under FUZZ_PKGS for FUZZTIME (10s) each.
	@for pkg in $$($(GO) list $(FUZZ_PKGS)); do \
	  targets=$$($(GO) test -list 'Fuzz.*' "$$pkg" | awk '/^Fuzz/'); \
	  for t in $$targets; do \
	    echo "== $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $(FUZZFLAGS) "$$pkg"; \
	  done; \
	done

fuzz-smoke: ## Every fuzz target for 3000 new inputs after its seed corpus (CI; a time budget let slow targets fuzz nothing).
	$(MAKE) --no-print-directory fuzz FUZZTIME=3000x

fuzz-long: ## Every fuzz target for 1,000,000 executions, one worker each (docs/reliability.md records a run).
	$(MAKE) --no-print-directory fuzz FUZZTIME=1000000x FUZZFLAGS='-parallel 1 -timeout 3h'

bench: ## Go benchmarks: per-pod decision, plans, expressions, webhook admission, cache memory, the grouper's memory at 100,000 pods (bench/README.md).
	$(GO) test -run '^$$' -bench . -benchmem ./podgrouper/core/workloadmap/ ./definitions/expr/ ./podgrouper/runtime/webhook/ ./podgrouper/runtime/podview/
	$(GO) test -run '^$$' -bench 'GrouperMemory|PodBookkeepingBytes' -benchtime 1x ./podgrouper/runtime/controller/
	$(GO) test -run '^$$' -bench CachedOwnerBytes -benchtime 1x ./podgrouper/core/owners/
	$(GO) test -run '^$$' -bench 'PodCacheBytes|ListPeakBytes' -benchtime 1x ./podgrouper/runtime/podcache/
	$(GO) test -run '^$$' -bench 'ScrapeWorkloads|ForgottenWorkloadBytes' -benchtime 3x ./podgrouper/runtime/workloadmetrics/
	$(GO) test -run '^$$' -bench WorkloadStateBytes -benchtime 1x ./podgrouper/runtime/controller/
	$(GO) test -run '^$$' -bench ReporterTick -benchmem ./podgrouper/runtime/findings/
	$(GO) test -run '^$$' -bench EventCorrelatorBytes -benchtime 1x ./cmd/gangmap-grouper/app/

bench-e2e: ## The 1,000-pod grouping throughput benchmark on a real control plane.
	assets=$$(bash hack/control-plane.sh); \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -tags e2e -run '^$$' -bench . -benchtime 1x -timeout 20m ./e2e/bench/

# Pods of the scale benchmark, and pods per workload (one gang each). The environment may add
# GANGMAP_SCALE_GROUPER_ARGS (the grouper's extra flags, e.g. "--qps=500 --burst=1000") and
# GANGMAP_SCALE_HEAP_PROFILE (a file for the grouper's heap profile once every pod is grouped).
SCALE_PODS ?= 20000
SCALE_PODS_PER_WORKLOAD ?= 10
# The grouper's --memory-limit in the scale run: 256 MiB less 80 MiB, what the grouper's default would
# give a container limited to the goal (issue 19); "0" for none.
SCALE_MEMORY_LIMIT ?= 176Mi
# 1: the grouper serves its admission webhook and the API server calls it on every pod create, as
# the chart installs it (pods grouped at admission); 0: no webhook, the controller repairs every pod.
SCALE_WEBHOOK ?= 1

bench-scale: ## Scale benchmark (not in CI): SCALE_PODS pods (20,000) of 10-pod workloads grouped on a real control plane, through the webhook (SCALE_WEBHOOK=0: repaired by the controller).
	assets=$$(bash hack/control-plane.sh); \
	GANGMAP_SCALE_PODS=$(SCALE_PODS) GANGMAP_SCALE_PODS_PER_WORKLOAD=$(SCALE_PODS_PER_WORKLOAD) GANGMAP_SCALE_MEMORY_LIMIT=$(SCALE_MEMORY_LIMIT) \
	GANGMAP_SCALE_WEBHOOK=$(SCALE_WEBHOOK) \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -tags e2e -run '^$$' -bench GroupScale -benchtime 1x -timeout 3h ./e2e/scale/

# Pods of `make bench-vs-kai` (10-pod CustomJobs), its rate limits ("default", "raised" or both)
# and the raised limit's flags, given to KAI's pod-grouper and gangmap's grouper alike.
VSKAI_PODS ?= 10000
VSKAI_LIMITS ?= default,raised
VSKAI_RAISED ?= --qps=1000 --burst=2000

bench-vs-kai: ## KAI's real pod-grouper (KAI_BIN=<dir>) vs gangmap's controller and webhook on VSKAI_PODS pods (10,000), each alone: table and ratios (not in CI; bench/README.md).
	@if [[ -z "$${KAI_BIN:-}" ]]; then echo "make bench-vs-kai: KAI_BIN is not set: KAI_BIN=<dir with KAI's podgrouper binary> (in a KAI checkout: CGO_ENABLED=0 go build -o <dir>/ ./cmd/podgrouper)" >&2; exit 2; fi
	@if [[ ! -x "$$KAI_BIN/podgrouper" ]]; then echo "make bench-vs-kai: KAI_BIN=$$KAI_BIN has no executable podgrouper" >&2; exit 2; fi
	assets=$$(bash hack/control-plane.sh); \
	KAI_BIN=$$KAI_BIN GANGMAP_VSKAI_PODS=$(VSKAI_PODS) GANGMAP_VSKAI_LIMITS=$(VSKAI_LIMITS) GANGMAP_VSKAI_RAISED="$(VSKAI_RAISED)" \
	KUBEBUILDER_ASSETS=$$assets $(GO) test -tags e2e -run '^$$' -bench VsKAI -benchtime 1x -timeout 4h ./e2e/scale/

clean: ## Remove bin/ and other build output (the control-plane cache in ~/.cache/gangmap is kept).
	rm -rf $(BIN) .e2e dist

.PHONY: chart helm image e2e-kind e2e-kai

# The real KAI Scheduler for e2e-kai, never fetched by this repository: KAI_BIN is a directory with
# KAI's scheduler, binder and podgrouper binaries, KAI_SRC a KAI source checkout (its CRDs are
# installed from deployments/kai-scheduler/crds). E2E_KAI_RUN selects tests (go test -run).
KAI_BIN ?=
KAI_SRC ?=
E2E_KAI_RUN ?= .

chart: ## Chart checks only: helm lint and template, values schema, NOTES, dashboard, RBAC vs the code (also part of unit).
	bash hack/helm.sh --path >/dev/null
	$(GO) test -count=1 ./deploy/helm/charttest/...

helm: ## Build (once, cached under ~/.cache/gangmap/tools) the pinned helm v3.19.0; print its path.
	bash hack/helm.sh --path

image: ## Build the container image gangmap:dev (Dockerfile; needs Docker; fails fast without).
	@command -v docker >/dev/null 2>&1 || { echo "make image: the docker CLI is not installed; the image needs a Docker engine" >&2; exit 1; }
	@timeout 20 docker info >/dev/null 2>&1 || { echo "make image: the Docker engine is not reachable ('docker info' failed); the image needs one" >&2; exit 1; }
	docker build -t gangmap:dev .

e2e-kind: ## kind + KAI Scheduler + this chart, gangs admitted all-or-nothing (needs Docker; fails fast without).
	bash hack/e2e-kind.sh

e2e-kai: ## e2e on the real KAI Scheduler (KAI_BIN=<dir of scheduler, binder, podgrouper> KAI_SRC=<KAI checkout>); not part of test.
	@[[ -n "$(KAI_BIN)" ]] || { echo "make e2e-kai: KAI_BIN is not set: give the directory of KAI's scheduler, binder and podgrouper binaries (in a KAI checkout: CGO_ENABLED=0 go build -o <dir>/ ./cmd/scheduler ./cmd/binder ./cmd/podgrouper)" >&2; exit 1; }
	@[[ -n "$(KAI_SRC)" ]] || { echo "make e2e-kai: KAI_SRC is not set: give a KAI source checkout (its deployments/kai-scheduler/crds are installed)" >&2; exit 1; }
	assets=$$(bash hack/control-plane.sh); \
	KAI_BIN=$(abspath $(KAI_BIN)) KAI_SRC=$(abspath $(KAI_SRC)) KUBEBUILDER_ASSETS=$$assets \
	  $(GO) test -tags e2e_kai -count=1 -p 1 -timeout 40m -v -run '$(E2E_KAI_RUN)' ./e2e/realkai/...

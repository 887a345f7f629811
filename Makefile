# Sandgate. `make help` lists the targets.

SHELL := /bin/bash
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin
IMAGE ?= sandgate/base:latest
SANDGATE_HOME ?= /var/lib/sandgate
SANDGATE_PORT ?= 8080
export PATH := $(dir $(GO)):$(PATH)

.PHONY: help setup setup-gvisor build runner images run test test-short lint bench fuzz clean compose compose-down
.PHONY: soak fuzz-short load k8s-up k8s-down test-k8s generate docs

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install what a fresh Debian host lacks (Docker engine, debootstrap) and start dockerd
	@deploy/setup-host.sh

setup-gvisor: ## register gVisor (runsc, built with the Kubernetes tier) as a runtime of the Docker engine, with checkpoints
	@deploy/setup-gvisor.sh

build: runner ## build the static bin/gateway and bin/runner
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gateway ./cmd/gateway

runner: ## build the static bin/runner
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/runner ./cmd/runner

images: setup build ## build sandgate/runner and sandgate/gateway from bin/, and the sandbox images (offline with debootstrap when no registry is reachable)
	@images/runner/build.sh $(BIN)/runner
	@images/gateway/build.sh $(BIN)/gateway
	@images/build.sh base browser

run: setup build images ## start the gateway on 127.0.0.1:8080 (local Docker, audit log under ./var/)
	$(BIN)/gateway --addr $${SANDGATE_ADDR:-127.0.0.1:8080} --var var --runner $(BIN)/runner --image $(IMAGE) --images sandgate/browser:latest --dev

test: setup setup-gvisor build images ## run every test: unit, the real Docker engine (runc and gVisor), then the Kubernetes tier (test-k8s)
	REQUIRE_DOCKER=1 $(GO) test -count=1 -timeout 45m ./...
	@# The local cluster's CSI driver is a module of its own (its gRPC and CSI deps stay out of go.mod).
	$(GO) -C deploy/kubernetes/local/csi-workspace test -count=1 ./...
	REQUIRE_DOCKER=1 SANDGATE_DISRUPTIVE=1 $(GO) test -count=1 -timeout 10m -run 'Disruptive' ./gateway/
	@# The Docker provider again, on an engine of its own that remaps user namespaces.
	host=$$(deploy/userns-engine.sh start) && \
	  DOCKER_HOST=$$host SANDGATE_USERNS=1 REQUIRE_DOCKER=1 $(GO) test -count=1 -timeout 10m -run 'TestUsernsRemap|TestConformance$$' ./sandbox/docker/; \
	  rc=$$?; deploy/userns-engine.sh stop; exit $$rc
	@$(MAKE) --no-print-directory test-k8s

test-short: ## unit tests only (no Docker)
	$(GO) test -short -count=1 ./...

docs: ## regenerate docs/tools.md from the golden tool list (gateway/testdata/tools_list.golden.json)
	$(GO) test -count=1 -run TestToolsReference ./docs -update

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w on the files above'; exit 1; }
	$(GO) vet ./...

bench: setup build images ## measure hot-path latency through the gateway (numbers in docs/performance.md)
	REQUIRE_DOCKER=1 $(GO) test -run '^$$' -bench . -benchtime 100x -count 1 ./gateway/ ./gateway/audit/ ./sandbox/docker/

load: setup build images ## drive a gateway of its own: N callers over S sessions per tool; calls/s, errors, p50/p99 (LOAD_FLAGS, e.g. --scenarios echo-1)
	$(GO) run ./cmd/load --gateway $(BIN)/gateway --runner $(BIN)/runner $${LOAD_FLAGS}

# A failing input is always written to testdata/fuzz/<target>/. Go 1.26's
# fuzz coordinator can also fail a run with a bare "context deadline
# exceeded" as -fuzztime expires (golang/go#75804, fixed in Go 1.27); a
# run that ends so and wrote no input is reported, not counted.
fuzz: ## run each fuzz target for FUZZTIME (default 30s), in FUZZPKGS (default ./...)
	@$(GO) test -list 'Fuzz.*' $${FUZZPKGS:-./...} | awk '/^Fuzz/{names[n++]=$$1} /^ok/{for(i=0;i<n;i++) print $$2, names[i]; n=0}' | \
	while read -r pkg target; do \
	  echo "fuzz $$pkg $$target"; \
	  corpus="$$($(GO) list -f '{{.Dir}}' $$pkg)/testdata/fuzz/$$target"; \
	  before=$$(ls "$$corpus" 2>/dev/null | wc -l); \
	  if ! out=$$($(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $${FUZZTIME:-30s} $$pkg 2>&1); then \
	    echo "$$out"; \
	    if [ "$$(ls "$$corpus" 2>/dev/null | wc -l)" = "$$before" ] && echo "$$out" | grep -q 'context deadline exceeded'; then \
	      echo "fuzz: $$target hit Go's fuzztime race (golang/go#75804) and wrote no failing input; not a failure"; \
	    else exit 1; fi; \
	  else echo "$$out" | tail -n 2; fi; \
	done

fuzz-short: ## run each fuzz target for 5 s (CI)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=5s

soak: setup build images ## 100 sessions of mixed tool calls for SOAK_DURATION (default 10m); fails on errors, growth or leftovers
	REQUIRE_DOCKER=1 SANDGATE_SOAK_DURATION=$${SOAK_DURATION:-10m} SANDGATE_SOAK_SESSIONS=$${SOAK_SESSIONS:-100} $(GO) test -count=1 -timeout 0 -run TestSoak ./gateway/ -v

compose: setup images ## run the gateway as a container (deploy/compose.yaml) on 127.0.0.1:$(SANDGATE_PORT), state in $(SANDGATE_HOME)
	@mkdir -p $(BIN) $(SANDGATE_HOME)/var
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/gateway ./cmd/runner
	install -D -m 0755 $(BIN)/runner $(SANDGATE_HOME)/bin/runner
	@# The gateway loop-mounts workspaces under var/ and dockerd must see
	@# them: compose.yaml mounts var/ rshared, which needs a shared mount.
	@mountpoint -q $(SANDGATE_HOME)/var || mount --bind $(SANDGATE_HOME)/var $(SANDGATE_HOME)/var
	@mount --make-shared $(SANDGATE_HOME)/var
	SANDGATE_HOME=$(SANDGATE_HOME) SANDGATE_PORT=$(SANDGATE_PORT) docker-compose -p sandgate -f deploy/compose.yaml up -d --build

compose-down: ## stop the compose gateway (it removes its pool and legacy sessions; sessionless sandboxes stay for the next start)
	docker-compose -p sandgate -f deploy/compose.yaml down

k8s-up: ## build (cached) and start a single-node cluster
	@deploy/kubernetes/local/up.sh

k8s-down: ## tear down everything k8s-up started
	@deploy/kubernetes/local/down.sh

# The local cluster needs root. Without it the tier is skipped with the
# reason, except under CI, which must never pass by skipping.
test-k8s: ## run the Kubernetes tier: start the local cluster (root), load the images, test the provider and the gateway under runc and gVisor, and deploy/kubernetes
	@if [ "$$(id -u)" != 0 ]; then \
	  echo "test-k8s: skipped: the local Kubernetes cluster (make k8s-up) runs its own containerd and kubelet and needs root"; \
	  if [ -n "$$CI" ]; then echo "test-k8s: CI is set, so this fails instead of skipping"; exit 1; fi; \
	else \
	  set -ex; \
	  $(MAKE) --no-print-directory images k8s-up; \
	  deploy/kubernetes/local/load-image.sh $(IMAGE) sandgate/runner:latest sandgate/gateway:latest; \
	  SANDGATE_K8S=1 $(GO) test -count=1 -timeout 30m ./sandbox/kubernetes/; \
	  SANDGATE_K8S=1 $(GO) test -count=1 -timeout 30m -run 'Kubernetes' ./gateway/ ./cmd/gateway/ ./deploy/; \
	fi

# The generated code is committed, and `make generate` must reproduce it
# byte for byte (check with git diff --exit-code). So every generator is
# pinned: protoc is Debian's (protobuf-compiler, 3.21 on bookworm; its
# version is written into the output), and the plugins are built at the
# exact versions go.mod requires of their modules, so that the generated
# code and the runtime it calls never disagree.
PROTO_DIR := gateway/e2b/proto
PROTO_OUT := gateway/e2b/envd
PROTO_PLUGINS := $(abspath $(BIN))/protoc-plugins
PROTOS := process/process.proto filesystem/filesystem.proto
gomod_version = $(shell $(GO) list -m -f '{{.Version}}' $(1))

generate: ## regenerate the E2B envd services (gateway/e2b/envd) from gateway/e2b/proto
	@if ! command -v protoc >/dev/null 2>&1 || [ ! -f /usr/include/google/protobuf/timestamp.proto ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "generate: protoc is missing; run: sudo apt-get update && sudo apt-get install -y protobuf-compiler libprotobuf-dev"; exit 1; fi; \
	  echo "generate: installing protobuf-compiler libprotobuf-dev"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends protobuf-compiler libprotobuf-dev >/dev/null; \
	fi
	GOBIN=$(PROTO_PLUGINS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(call gomod_version,google.golang.org/protobuf)
	GOBIN=$(PROTO_PLUGINS) $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(call gomod_version,connectrpc.com/connect)
	rm -f $(PROTO_OUT)/*/*.pb.go $(PROTO_OUT)/*/*connect/*.connect.go
	mkdir -p $(PROTO_OUT)
	protoc -I $(PROTO_DIR) -I /usr/include \
	  --plugin=protoc-gen-go=$(PROTO_PLUGINS)/protoc-gen-go --go_out=$(PROTO_OUT) --go_opt=paths=source_relative \
	  --plugin=protoc-gen-connect-go=$(PROTO_PLUGINS)/protoc-gen-connect-go --connect-go_out=$(PROTO_OUT) --connect-go_opt=paths=source_relative \
	  $(PROTOS)

clean: ## remove build output (not var/)
	rm -rf $(BIN)

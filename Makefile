# toolgate — the commands a newcomer needs. See README.md.
GO ?= go
SHELL := bash
.SHELLFLAGS := -o pipefail -c
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: demo test test-go test-loaded run check build image bench bench-full bench-go pgo faults lint fuzz schema

## demo: the gateway on its embedded default config, with a scripted client (no API key needed); KEEP=1 keeps it serving, with its console
demo:
	$(GO) run -pgo=off ./cmd/demo $(if $(KEEP),--keep)

## test: everything CI runs — the race-enabled test suite first (then the slowest packages), then formatting, vet and staticcheck
test: test-go lint
	@echo "== make test: the deploy manifests (deploy/validate)"
	cd deploy/validate && $(GO) test -count=1 ./...
	@echo "== make test: passed"

# Each package's test timeout is about three times its longest run seen
# on a busy 2-core machine with cold caches (make test-loaded COLD=1):
# SLOW_PKGS took up to 140 s there (cmd/gateway builds the static binary
# too), every other package under 10 s. No test asserts a duration, so a
# slow machine only takes longer. The allocation guards run once more
# without the race detector, which makes sync.Pool drop items.
SLOW_PKGS := cmd/gateway internal/testing/faults internal/gateway
SLOW_TIMEOUT := 10m
TEST_TIMEOUT := 3m
TEST_LOG := $(or $(TMPDIR),/tmp)/toolgate-test.log
MODULE := github.com/toolgate/toolgate

test-go:
	@rm -f $(TEST_LOG)
	@echo "== make test: 1/4 the race-enabled suite, every package but the slowest (a first run compiles everything: minutes)"
	$(GO) test -race -pgo=off -count=1 -timeout $(TEST_TIMEOUT) $(filter-out $(addprefix $(MODULE)/,$(SLOW_PKGS)),$(shell $(GO) list ./...)) 2>&1 | tee -a $(TEST_LOG)
	@echo "== make test: 2/4 the slowest packages: $(SLOW_PKGS)"
	$(GO) test -race -pgo=off -count=1 -timeout $(SLOW_TIMEOUT) $(addprefix ./,$(SLOW_PKGS)) 2>&1 | tee -a $(TEST_LOG)
	$(GO) test -pgo=off -count=1 -timeout $(TEST_TIMEOUT) -run 'Allocs$$' ./internal/wire 2>&1 | tee -a $(TEST_LOG)
	@echo "slowest packages:"; grep '^ok' $(TEST_LOG) | sort -k3,3 -g -r | head -5 | awk '{print "  " $$3 "\t" $$2}'

## test-loaded: make test beside two CPU-burning processes, as on a busy CI runner or laptop (COLD=1: with an empty build cache); prints its wall time
test-loaded:
	@yes > /dev/null & y1=$$!; yes > /dev/null & y2=$$!; trap 'kill $$y1 $$y2' EXIT; \
	cache=$$($(GO) env GOCACHE); if [ -n "$(COLD)" ]; then cache=$$(mktemp -d); fi; \
	start=$$(date +%s); GOCACHE=$$cache $(MAKE) --no-print-directory test; rc=$$?; \
	if [ -n "$(COLD)" ]; then chmod -R u+w $$cache; rm -rf $$cache; fi; \
	echo "make test beside two CPU-bound processes: exit $$rc after $$(( $$(date +%s) - start )) s"; exit $$rc

## run: the gateway with configs/gateway.yaml (real providers; keys from the environment)
run:
	$(GO) run -pgo=off ./cmd/gateway --config configs/gateway.yaml

## check: validate a config without starting anything (CONFIG, default configs/gateway.yaml): every problem with its field path
CONFIG ?= configs/gateway.yaml
check:
	$(GO) run -pgo=off ./cmd/gateway check --config $(CONFIG)

## build: static binaries in bin/
build:
	CGO_ENABLED=0 $(GO) build -o bin/toolgate ./cmd/gateway
	CGO_ENABLED=0 $(GO) build -o bin/toolgate-sim ./cmd/sim
	CGO_ENABLED=0 $(GO) build -o bin/bench-proxy ./bench/proxy

## image: the container image (needs Docker): a static binary in distroless/static, non-root
IMAGE ?= toolgate:dev
image:
	docker build -t $(IMAGE) .

## bench: the quick comparison (a few minutes): direct vs bare proxy vs toolgate, the Go benchmarks behind the per-chunk and long-stream targets, and every target with its ratio
bench: build
	$(GO) run ./bench/runner -bin bin

## pgo: refresh cmd/gateway/default.pgo (profile-guided optimization, used by every build of the gateway) from the CPU profiles of a make bench run
pgo: build
	rm -rf $(PGO_DIR) && mkdir -p $(PGO_DIR)
	$(GO) run ./bench/runner -bin bin -go=false -only - -profile $(PGO_DIR) -out $(PGO_DIR)/run.jsonl
	$(GO) tool pprof -proto $(PGO_DIR)/*.cpu.pprof > cmd/gateway/default.pgo

PGO_DIR ?= $(or $(TMPDIR),/tmp)/toolgate-pgo

## bench-full: every load point (about 20 minutes), then every Go benchmark
bench-full: build
	$(GO) run ./bench/runner -bin bin -full
	$(MAKE) bench-go

## bench-go: the Go benchmarks of the proxy path, the stream codec and repair
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/gateway/ ./internal/wire/ ./internal/repair/

## faults: the fault suite at full size (500 requests per fault, 2,000 streams for 60 s with 5% faulted, the hostile-input suite with 3,000 held connections and 10 MB bodies, each worst-case shape's CPU against a plain body's) and reloads under load
faults:
	$(GO) test -count=1 -timeout 15m -v -run 'TestFaults|TestClientsLeave|TestLoad|TestHostile' -bench 'BenchmarkHostileCPU$$' -benchtime 1x ./internal/testing/faults/ -faults.full
	$(GO) test -count=1 -run 'TestReload' ./internal/app/

## schema: rewrite configs/toolgate.schema.json (the config file's JSON Schema, for editors) from the config types; make test checks it is current
schema:
	$(GO) test -count=1 -run '^TestSchema$$' ./internal/config/ -update

## lint: gofmt, vet and staticcheck
lint:
	@echo "== make test: 3/4 gofmt, go vet, staticcheck (a first run builds staticcheck and deploy/validate's Kubernetes dependencies)"
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd deploy/validate && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

## fuzz: every fuzz target of every package for a short while (FUZZTIME=30s for longer)
# Go 1.26's fuzzing engine can fail a target with a bare "context deadline
# exceeded" as -fuzztime ends, having found nothing (golang/go#75804, fixed
# in Go 1.27): such a run counts when its corpus then replays cleanly; a
# failing input (written to testdata/fuzz) always fails.
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$f ($$pkg)"; \
	    out=$$($(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); rc=$$?; echo "$$out"; \
	    if [ $$rc -ne 0 ]; then \
	      if echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	        echo "(the engine's stop at -fuzztime failed, nothing found: replaying $$f's corpus)"; \
	        $(GO) test -count=1 -run "^$$f\$$" $$pkg || exit 1; \
	      else exit 1; fi; \
	    fi; \
	  done; \
	done

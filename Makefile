# toolgate — the commands a newcomer needs. See README.md.
GO ?= go
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: demo test run build image bench bench-full bench-go pgo faults lint fuzz

## demo: the gateway on its embedded default config, with a scripted client (no API key needed)
demo:
	$(GO) run -pgo=off ./cmd/gateway demo

## test: everything CI runs — formatting, vet, staticcheck and the race-enabled test suite
test: lint
	$(GO) test -race -pgo=off -count=1 -timeout 5m ./...
	cd deploy/validate && $(GO) test -count=1 ./...

## run: the gateway with configs/gateway.yaml (real providers; keys from the environment)
run:
	$(GO) run ./cmd/gateway --config configs/gateway.yaml

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

## faults: the fault suite at full size (500 requests per fault, 2,000 streams for 60 s with 5% faulted, the hostile-input suite with 3,000 held connections and 10 MB bodies) and reloads under load
faults:
	$(GO) test -count=1 -timeout 15m -v -run 'TestFaults|TestClientsLeave|TestLoad|TestHostile' ./internal/faults/ -faults.full
	$(GO) test -count=1 -run 'TestReload' ./cmd/gateway/

## lint: gofmt, vet and staticcheck
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd deploy/validate && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

## fuzz: each fuzz target for a short while (FUZZTIME=30s for longer)
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzEvents$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzStringValue$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzCollector$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzRestream$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzTemplate$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzAnthropicEvents$$' -fuzztime $(FUZZTIME) ./internal/wire/anthropic/
	$(GO) test -run '^$$' -fuzz '^FuzzResponsesRequest$$' -fuzztime $(FUZZTIME) ./internal/wire/responses/
	$(GO) test -run '^$$' -fuzz '^FuzzRepair$$' -fuzztime $(FUZZTIME) ./internal/repair/
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) ./internal/gateway/

package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
	"go.yaml.in/yaml/v3"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The embedded default config loads and routes every model to the simulator.
func TestEmbeddedDefault(t *testing.T) {
	c, err := Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"gpt-4o", "sim-tool", "anything/at-all"} {
		r, ok := c.Match(model)
		if !ok || r.Upstream != "sim" {
			t.Errorf("Match(%q) = %v, %v; want the sim route", model, r, ok)
		}
	}
	u, _ := c.Upstream("sim")
	if !u.Simulator {
		t.Error("the default upstream is not the simulator")
	}
	if c.Listen != ":8080" || c.AdminListen != "127.0.0.1:9090" {
		t.Errorf("listeners %q %q", c.Listen, c.AdminListen)
	}
}

// The example config for real providers parses when its key is set.
func TestExampleConfig(t *testing.T) {
	_, err := Load(filepath.Join("..", "..", "configs", "gateway.yaml"), env(map[string]string{"OPENAI_API_KEY": "sk-test"}))
	if err != nil {
		t.Fatal(err)
	}
}

// Unset fields get their documented defaults (the numbers and names of
// docs/configuration.md, written out: not the constants compared with
// themselves), each setting parsed by its owner.
func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(`
upstreams: [{name: a, url: "http://127.0.0.1:1/v1"}, {name: c, url: "https://api.anthropic.com/v1", protocol: anthropic}]
routes: [{model: m, upstream: a, budget: {max_calls: 3}}]
keys: [{name: k, sha256: `+strings.Repeat("a", 64)+`, budget: {max_cost_usd: 1}}]
pricing: {m: {input: 1, output: 1}}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	u, a, r := c.Upstreams[0], c.Upstreams[1], c.Routes[0]
	for _, d := range []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, ":8080"}, {"admin_listen", c.AdminListen, "127.0.0.1:9090"},
		{"log.level", c.Log.Level.Value, observe.Info}, {"log.flush_interval", *c.Log.FlushInterval, time.Second},
		{"server.drain_timeout", c.Server.DrainTimeout, 30 * time.Second}, {"server.max_body_bytes", c.Server.MaxBodyBytes, int64(10 << 20)},
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout, 10 * time.Second}, {"server.read_body_timeout", c.Server.ReadBodyTimeout, 30 * time.Second},
		{"server.max_pending_requests", c.Server.MaxPendingRequests, 4096}, {"server.max_pending_keyless", c.Server.MaxPendingKeyless, 2048},
		{"sessions.header", c.Sessions.Header, "X-Session-Id"}, {"sessions.window", c.Sessions.Window, time.Hour},
		{"state.store", c.State.Store.Value, state.Memory}, {"state.on_error", c.State.OnError.Value, state.FailOpen},
		{"state.timeout", c.State.Timeout, 250 * time.Millisecond}, {"responses.store", c.Responses.Store.Value, state.None},
		{"upstreams[].protocol", u.Protocol.Value, translate.OpenAI}, {"upstreams[].auth_header", u.AuthHeader, "Authorization"},
		{"anthropic auth_header", a.AuthHeader, "x-api-key"}, {"anthropic_version", a.AnthropicVersion, "2023-06-01"}, {"default_max_tokens", a.DefaultMaxTokens, 4096},
		{"upstreams[].max_event_bytes", u.MaxEventBytes, 8 << 20}, {"upstreams[].header_timeout", u.HeaderTimeout, 5 * time.Minute},
		{"upstreams[].tool_call_content", u.ToolCallContent.Value, repair.ContentKeep}, {"upstreams[].reasoning_field", u.ReasoningField.Value, wire.ReasoningContent},
		{"upstreams[].output_limit_field", u.OutputLimitField.Value, wire.OutputLimit(0)}, {"quirks", u.Normalizations, wire.AllQuirks()},
		{"routes[].name", r.Name, "m"}, {"routes[].repair", r.Repair.Value, repair.ModeFix}, {"routes[].policy", r.Policy.Value, policy.ModeSession},
		{"routes[].validate_arguments", r.ValidateArguments.Value, policy.ArgumentsAnnotate}, {"routes[].tool_calls", r.ToolCalls.Value, policy.DeliverStream},
		{"routes[].retry_backoff", r.RetryBackoff, 250 * time.Millisecond}, {"routes[].cooldown", r.Cooldown, 30 * time.Second},
		{"normalize", *r.Normalize.ArgumentsToString && *r.Normalize.SynthesizeIDs && *r.Normalize.DedupeCallIDs, true},
		{"reasoning.output", r.Reasoning.Output.Value.String(), "reasoning_content"}, {"budget.on_input_over", r.Budget.OnInputOver.Value, budget.InputRefuse},
		{"budget on medium", r.Budget.Limits().MaxOutputTokens, 1024}, {"keys[].budget.cost_window", c.Keys[0].Budget.CostWindow.Value, budget.Day},
	} {
		if d.got != d.want {
			t.Errorf("%s: %v, want %v", d.name, d.got, d.want)
		}
	}
}

// ${ENV} is expanded in values; $${ stays literal.
func TestEnvExpansion(t *testing.T) {
	c, err := Parse([]byte(`
server: {drain_timeout: "${DRAIN}"}
upstreams: [{name: a, url: "${BASE}/v1", api_key: "${KEY}", headers: {X-Lit: "$${NOT}"}}]
routes: [{model: m, upstream: a}]
`), env(map[string]string{"BASE": "https://example.test", "KEY": "sk-1", "DRAIN": "5s"}))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Upstreams[0]
	if u.URL != "https://example.test/v1" || u.APIKey != "sk-1" || u.Headers["X-Lit"] != "${NOT}" {
		t.Errorf("got %+v", u)
	}
	if c.Server.DrainTimeout != 5*time.Second {
		t.Errorf("drain = %v", c.Server.DrainTimeout)
	}
}

// Every problem is reported at once, each naming its field path.
func TestValidationNamesFields(t *testing.T) {
	_, err := Parse([]byte(`
log: {level: loud}
upstreams:
  - {name: a, url: "ftp://x"}
  - {name: a, simulator: true, url: "http://x"}
  - {name: b, api_key: "${MISSING_KEY}"}
routes:
  - {model: m, upstream: nope}
  - {model: m, upstream: a}
  - {upstream: a, upstream_model: "x*"}
`), env(nil))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	// The missing variable is reported with everything else.
	if len(ce.Problems) != 11 || !strings.Contains(ce.Problems[0], "upstreams[2].api_key: environment variable MISSING_KEY is not set") {
		t.Fatalf("problems = %q", ce.Problems)
	}
	_, err = Parse([]byte(`
log: {level: loud}
upstreams:
  - {name: a, url: "ftp://x", tool_call_content: blank, quirks: [missing_index, guess]}
  - {name: a, simulator: true, url: "http://x"}
  - {name: b}
routes:
  - {model: m, upstream: nope, repair: maybe, policy: lax, normalize: {synthesize_ids: false}}
  - {model: m, upstream: a}
  - {upstream: a, upstream_model: "x*"}
`), env(nil))
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	for _, want := range []string{
		"log.level: must be debug, info, warn or error",
		"upstreams[0].url: must be an absolute http or https URL",
		"upstreams[1].name: \"a\" is used by another upstream",
		"upstreams[1].url: must be empty when simulator is true",
		"upstreams[2].url: is required",
		"routes[0].upstream: \"nope\" is not the name of any entry in upstreams",
		"routes[1].model: \"m\" is routed twice",
		"routes[2].model: is required",
		"routes[2].upstream_model: must be a model name",
		"upstreams[0].tool_call_content: must be keep, null or empty",
		"routes[0].repair: must be fix, reject or off",
		"routes[0].policy: must be session, default or off",
		`upstreams[0].quirks: unknown quirk "guess"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// Unknown keys are refused with their line, so typos do not pass silently.
func TestUnknownKey(t *testing.T) {
	_, err := Parse([]byte("upstreams: [{name: a, url: \"http://x\", api_kye: k}]\nroutes: [{model: m, upstream: a}]\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "api_kye") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), env(nil))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// Exact routes win over patterns; patterns are tried in file order; * spans
// any characters including '/'.
func TestMatch(t *testing.T) {
	c, err := Parse([]byte(`
upstreams: [{name: a, url: "http://a/v1"}, {name: b, url: "http://b/v1"}]
routes:
  - {name: wide, model: "gpt-*", upstream: a}
  - {name: exact, model: "gpt-4o", upstream: b, upstream_model: "gpt-4o-2024-08-06"}
  - {name: vendor, model: "*/*-coder", upstream: b}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ model, route, target string }{
		{"gpt-4o", "exact", "gpt-4o-2024-08-06"},
		{"gpt-4o-mini", "wide", "gpt-4o-mini"},
		{"qwen/qwen3-coder", "vendor", "qwen/qwen3-coder"},
		{"claude", "", ""},
	} {
		r, ok := c.Match(tc.model)
		if tc.route == "" {
			if ok {
				t.Errorf("Match(%q) = %s, want none", tc.model, r.Name)
			}
			continue
		}
		if !ok || r.Name != tc.route || r.TargetModel(tc.model) != tc.target {
			t.Errorf("Match(%q) = %v; want %s → %s", tc.model, r, tc.route, tc.target)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*", "abc", true}, {"*c", "abc", true}, {"a*c", "abbbc", true},
		{"a*c", "abcd", false}, {"a**b", "ab", true}, {"*a*b*", "xaybz", true}, {"abc", "abd", false},
	} {
		if got := GlobMatch(tc.p, tc.s); got != tc.want {
			t.Errorf("GlobMatch(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

// quirks accepts a word or a list.
func TestQuirks(t *testing.T) {
	c, err := Parse([]byte(`
upstreams:
  - {name: a, url: "http://a/v1", quirks: strict}
  - {name: b, url: "http://b/v1", quirks: [missing_index, finish_reason]}
routes: [{model: m, upstream: a}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstreams[0].Quirks.Has("missing_index") || !c.Upstreams[1].Quirks.Has("finish_reason") || c.Upstreams[1].Quirks.Has("no_done") {
		t.Errorf("%v %v", c.Upstreams[0].Quirks, c.Upstreams[1].Quirks)
	}
}

// Reasoning configuration that would override the gateway's own fields is
// refused at load, naming the field (docs/spec.md §4).
func TestReasoningValidation(t *testing.T) {
	_, err := Parse([]byte(`
upstreams: [{name: a, url: "http://a/v1"}]
routes:
  - model: m
    upstream: a
    reasoning:
      format: custom
      level: extreme
      budgets: {huge: 5}
      custom: {high: {max_tokens: 10, chat_template_kwargs: {enable_thinking: true}}}
      fields: {stream: false, messages: []}
  - {model: n, upstream: a, reasoning: {level: high}}
`), env(nil))
	for _, want := range []string{
		"routes[0].reasoning.level: must be off, low, medium or high",
		"routes[0].reasoning.budgets.huge: is not a level",
		"routes[0].reasoning.custom.high.max_tokens: may not be set",
		"routes[0].reasoning.fields.stream: may not be set",
		"routes[0].reasoning.fields.messages: may not be set",
		"routes[1].reasoning.format: is required",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// The state block and rate limits: defaults, and each mistake named by
// its field, without echoing a Redis URL (it may hold a password).
func TestStateValidation(t *testing.T) {
	c, err := Parse([]byte(`
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Store.Value != state.Memory || c.State.Prefix != "toolgate:" || c.State.Timeout != 250*time.Millisecond || c.State.OnError.Value != state.FailOpen {
		t.Errorf("defaults: %+v", c.State)
	}
	c, err = Parse([]byte(`
state: {store: redis, redis_url: "${REDIS_URL}", on_error: fail_closed}
keys: [{name: k, sha256: `+strings.Repeat("ab", 32)+`, rate_limit: {requests_per_minute: 60, tokens_per_minute: 10000}}]
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(map[string]string{"REDIS_URL": "redis://:pw@localhost:6379/0"}))
	if err != nil || c.State.RedisURL != "redis://:pw@localhost:6379/0" || c.Keys[0].RateLimit.TokensPerMinute != 10000 {
		t.Fatalf("redis config: %v %+v", err, c)
	}
	_, err = Parse([]byte(`
state: {store: disk, timeout: -1s, on_error: shrug}
keys: [{name: k, sha256: `+strings.Repeat("ab", 32)+`, rate_limit: {requests_per_minute: -1}}]
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
	for _, want := range []string{
		`state.store: must be memory or redis, got "disk"`,
		"state.timeout: must be a positive duration",
		`state.on_error: must be fail_open or fail_closed, got "shrug"`,
		"keys[0].rate_limit: values must be positive",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	for url, want := range map[string]string{"": "state.redis_url: is required", "http://secret@x": "state.redis_url: must be a redis://",
		"redis://a:7000,http://secret@b:7001": "or several, comma-separated"} {
		_, err = Parse([]byte(`
state: {store: redis, redis_url: "`+url+`"}
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("redis_url %q: %v", url, err)
		}
	}
	c, err = Parse([]byte(`
state: {store: redis, redis_url: "redis://a:7000, redis://b:7001,rediss://c:7002", cluster: true}
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
	if err != nil || !c.State.Cluster {
		t.Errorf("a cluster's seeds: %v", err)
	}
}

// The toolgate configs inside deploy/'s ConfigMaps load (with their
// environment variables set) and pass validation.
func TestDeployConfigs(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/*/configmap.yaml")
	if len(files) == 0 {
		t.Fatal("no ConfigMap in deploy/")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cm struct {
			Data map[string]string `yaml:"data"`
		}
		if err := yaml.Unmarshal(b, &cm); err != nil || cm.Data["toolgate.yaml"] == "" {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := Parse([]byte(cm.Data["toolgate.yaml"]), func(k string) string { return "redis://" + k + ":6379/0" }); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The Helm chart's default config (its values' config block).
	b, err := os.ReadFile("../../deploy/helm/toolgate/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config yaml.Node `yaml:"config"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	cfg, _ := yaml.Marshal(&values.Config)
	if _, err := Parse(cfg, func(k string) string { return "sk-" + k }); err != nil {
		t.Errorf("the chart's default config: %v", err)
	}
}

// Prices: exact names win over patterns, the longest pattern first; a
// spend limit is a key's, and needs prices.
func TestPricing(t *testing.T) {
	c, err := Parse([]byte(`
pricing:
  "gpt-4o": {input: 2.5, cached_input: 1.25, output: 10}
  "gpt-*": {input: 1, output: 1}
  "gpt-4o-*": {input: 3, output: 12}
keys: [{name: k, sha256: `+strings.Repeat("a", 64)+`, budget: {max_cost_usd: 5, cost_window: month}}]
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
	if err != nil || len(c.Pricing) != 3 || *c.Pricing["gpt-4o"].CachedInput != 1.25 {
		t.Fatalf("pricing: %v %+v", err, c.Pricing)
	}
	for yaml, want := range map[string]string{
		`pricing: {m: {input: -1}}` + "\nkeys: []":                                                                                           `pricing["m"]: prices must be positive`,
		"keys: [{name: k, sha256: " + strings.Repeat("a", 64) + ", budget: {max_cost_usd: 5}}]":                                              "keys[0].budget.max_cost_usd: needs prices",
		"pricing: {m: {input: 1}}\nkeys: [{name: k, sha256: " + strings.Repeat("a", 64) + ", budget: {max_cost_usd: 5, cost_window: week}}]": "cost_window: must be day or month",
	} {
		_, err := Parse([]byte(yaml+`
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a}]
`), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", yaml, err)
		}
	}
	_, err = Parse([]byte(`
pricing: {m: {input: 1}}
upstreams: [{name: a, url: "http://x"}]
routes: [{model: m, upstream: a, budget: {max_cost_usd: 1}}]
`), env(nil))
	if err == nil || !strings.Contains(err.Error(), "routes[0].budget.max_cost_usd: spend is limited per key") {
		t.Errorf("a route's spend: %v", err)
	}
}

// A route's deployments: upstream or upstreams, names that exist, once
// each, weights with a positive total; a single upstream is one
// deployment of weight 1.
func TestDeployments(t *testing.T) {
	parse := func(route string) (*Config, error) {
		return Parse([]byte(`
upstreams: [{name: a, url: "http://a"}, {name: b, url: "http://b"}]
routes: [`+route+`]
`), env(nil))
	}
	c, err := parse(`{model: m, upstream: a}`)
	if err != nil || len(c.Routes[0].Upstreams) != 1 || *c.Routes[0].Upstreams[0].Weight != 1 || c.Routes[0].Cooldown != 30*time.Second {
		t.Fatalf("one upstream: %v %+v", err, c.Routes[0])
	}
	c, err = parse(`{model: m, upstreams: [{name: b, weight: 0}, {name: a, weight: 5}], cooldown: 5s}`)
	if err != nil || c.Routes[0].Upstream != "b" || *c.Routes[0].Upstreams[1].Weight != 5 {
		t.Fatalf("deployments: %v %+v", err, c.Routes[0])
	}
	for route, want := range map[string]string{
		`{model: m, upstream: a, upstreams: [{name: b}]}`: "routes[0].upstreams: set upstream or upstreams, not both",
		`{model: m}`: "routes[0].upstream: is required",
		`{model: m, upstreams: [{name: a}, {name: c}]}`:             `routes[0].upstreams[1].name: "c" is not the name`,
		`{model: m, upstreams: [{name: a}, {name: a}]}`:             `routes[0].upstreams[1].name: "a" is listed twice`,
		`{model: m, upstreams: [{name: a, weight: 0}]}`:             "at least one deployment needs a positive weight",
		`{model: m, upstreams: [{name: a, weight: -1}, {name: b}]}`: "routes[0].upstreams[0].weight: must be between",
		`{model: m, upstream: c}`:                                   `routes[0].upstream: "c" is not the name`,
	} {
		if _, err := parse(route); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", route, err, want)
		}
	}
}

// The boundaries a hostile client tests: the admin listener on loopback
// unless configured, keys labelled by name unless hidden, path rules with
// their methods (GET, POST, DELETE unless listed), the pending caps'
// keyless share and address grouping, the Responses store's bounds.
func TestBoundaryDefaults(t *testing.T) {
	c, err := Parse([]byte(`
upstreams: [{name: a, url: "http://127.0.0.1:1/v1"}]
routes: [{model: m, upstream: a, passthrough: ["/v1/audio/*", {path: "/v1/files/*/content", methods: [GET]}], paths: ["/v1/files"]}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := &c.Routes[0]
	if c.AdminListen != "127.0.0.1:9090" || !*c.Metrics.KeyLabels || c.Server.MaxPendingKeyless != DefaultMaxPending/2 ||
		c.Server.PendingIPv4Prefix != 32 || c.Server.PendingIPv6Prefix != 64 ||
		c.Responses.MaxBytes != 256<<20 || c.Responses.MaxBytesPerKey != 64<<20 {
		t.Errorf("defaults: admin %q, key labels %v, server %+v, responses %+v", c.AdminListen, *c.Metrics.KeyLabels, c.Server, c.Responses)
	}
	for _, tc := range []struct {
		method, path string
		want         Forwarding
	}{
		{"POST", "/v1/audio/speech", Forwarded},
		{"DELETE", "/v1/audio/speech", Forwarded},
		{"PUT", "/v1/audio/speech", MethodNotAllowed},
		{"GET", "/v1/files/f1/content", Forwarded},
		{"DELETE", "/v1/files/f1/content", MethodNotAllowed},
		{"GET", "/v1/files", Forwarded},
		{"GET", "/v1/files/f1", NotForwarded}, // paths add only what they list
		{"POST", "/v1/fine_tuning/jobs", NotForwarded},
		{"POST", "/v1/embeddings", Forwarded},
		{"GET", "/v1/embeddings", MethodNotAllowed},
	} {
		if got := r.Forwards(tc.method, tc.path); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
	if got := r.MethodsFor("/v1/files/f1/content"); len(got) != 1 || got[0] != "GET" {
		t.Errorf("methods for a GET-only path: %v", got)
	}
	// passthrough: true forwards every /v1 path but those of objects the
	// upstream keeps for its whole organization, unless listed by name.
	c, err = Parse([]byte(`
upstreams: [{name: a, url: "http://127.0.0.1:1/v1"}]
routes: [{model: m, upstream: a, passthrough: true, paths: ["/v1/batches*"]}]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	r = &c.Routes[0]
	for _, tc := range []struct {
		method, path string
		want         Forwarding
	}{
		{"POST", "/v1/audio/speech", Forwarded},
		{"GET", "/v1/models/x", Forwarded},
		{"GET", "/v1/files", NotForwarded},
		{"GET", "/v1/files/f1/content", NotForwarded},
		{"GET", "/v1/chat/completions/chatcmpl-1", NotForwarded},
		{"GET", "/v1/conversations/c1/items", NotForwarded},
		{"POST", "/v1/vector_stores", NotForwarded},
		{"POST", "/v1/fine_tuning/jobs", NotForwarded},
		{"GET", "/v1/filesystem", Forwarded}, // a path only beginning like one
		{"GET", "/v1/batches/b1", Forwarded}, // listed by name
	} {
		if got := r.Forwards(tc.method, tc.path); got != tc.want {
			t.Errorf("passthrough: true, %s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
	_, err = Parse([]byte(`
server: {max_pending_requests: 10, max_pending_keyless: 11, pending_ipv6_prefix: 129}
responses: {store: memory, max_bytes: 100, max_bytes_per_key: 200}
upstreams: [{name: a, url: "http://127.0.0.1:1/v1"}]
routes: [{model: m, upstream: a, passthrough: [{path: "/v1/x", methods: [TRACE]}], paths: ["/files"]}]
`), env(nil))
	for _, want := range []string{
		"server.max_pending_keyless: must be positive and at most max_pending_requests (10), got 11",
		"pending_ipv6_prefix 1 to 128",
		"responses.max_bytes_per_key:",
		`routes[0].passthrough[0].methods: "TRACE" is not a method the gateway forwards`,
		`routes[0].paths[0]: must be a /v1/ path`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// A key whose output limit leaves no room for a route's thinking budget
// would have every request on that route refused: the config is refused
// at load, naming both numbers (as is a route whose own budget leaves
// none; an anthropic upstream takes any format as thinking-budget). A key
// that may not use the route, or one with room, is fine.
func TestThinkingBudgetAtLoad(t *testing.T) {
	key := func(models, budget string) string {
		return `keys: [{name: k, sha256: ` + strings.Repeat("a", 64) + `, models: ` + models + `, budget: ` + budget + `}]` + "\n"
	}
	for _, tc := range []struct {
		keys, route, want string
	}{
		{key(`[]`, `{preset: small}`), `{model: "*", upstream: up, reasoning: {format: thinking-budget, level: low}}`,
			"keys[0].budget: the key's output limit (max_output_tokens 512) is not above routes[0]'s thinking budget (1024 tokens)"},
		{``, `{model: "*", upstream: up, reasoning: {format: thinking-budget, level: medium}, budget: {max_output_tokens: 2048}}`,
			"routes[0].reasoning: the thinking budget (4096 tokens) must be below the route's output limit (max_output_tokens 2048)"},
		{``, `{model: "*", upstream: claude, reasoning: {format: reasoning-effort, level: high}, budget: {max_output_tokens: 8000}}`,
			"routes[0].reasoning: the thinking budget (8192 tokens) must be below the route's output limit (max_output_tokens 8000)"},
		{key(`["other-*"]`, `{preset: small}`), `{model: "gpt-*", upstream: up, reasoning: {format: thinking-budget, level: low}}`, ""},
		{key(`[]`, `{preset: large}`), `{model: "*", upstream: up, reasoning: {format: thinking-budget, level: low}}`, ""},
	} {
		yaml := "upstreams: [{name: up, url: \"http://127.0.0.1:1/v1\"}, {name: claude, protocol: anthropic, url: \"https://api.anthropic.com/v1\"}]\nroutes: [" + tc.route + "]\n" + tc.keys
		_, err := Parse([]byte(yaml), env(nil))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.route, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.route, err, tc.want)
		}
	}
}

// An anthropic upstream's URL must name the API version its paths hang
// from: the base URL the Anthropic SDKs use (without /v1) would get 404 on
// every request.
func TestAnthropicURL(t *testing.T) {
	for url, ok := range map[string]bool{"https://api.anthropic.com/v1": true, "https://api.anthropic.com/v1/": true, "https://proxy.example/anthropic/v1": true,
		"https://api.anthropic.com": false, "https://api.anthropic.com/": false, "https://proxy.example/anthropic": false} {
		_, err := Parse([]byte("upstreams: [{name: c, protocol: anthropic, url: \""+url+"\"}]\nroutes: [{model: m, upstream: c}]\n"), env(nil))
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "upstreams[0].url: must end with the API version, as in https://api.anthropic.com/v1") {
			t.Errorf("%s: %v", url, err)
		}
	}
}

// An upstream's URL may name the model once, as a whole segment of its
// path (Azure OpenAI's deployment URLs); its api_version is a version.
func TestModelInURL(t *testing.T) {
	for _, tc := range []struct{ url, version, want string }{
		{"https://r.openai.azure.com/openai/deployments/{model}", "2024-10-21", ""},
		{"https://r.openai.azure.com/openai/deployments/{model}/", "2024-10-01-preview", ""},
		{"https://r.openai.azure.com/openai/v1", "", ""},
		{"https://{model}.example/v1", "", "must be an absolute http or https URL"},
		{"https://r.example/d/{model}/x/{model}", "", "may name the model once"},
		{"https://r.example/d/{deployment}", "", "may name the model once"},
		{"https://r.example/d/x{model}", "", "as a whole segment of its path"},
		{"https://r.openai.azure.com/openai/deployments/{model}", "2024-10-21&x=1", "api_version: must be a version"},
	} {
		_, err := Parse([]byte(`upstreams: [{name: a, url: "`+tc.url+`", api_version: "`+tc.version+`"}]`+"\nroutes: [{model: m, upstream: a}]\n"), env(nil))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %q: %v, want %q", tc.url, tc.version, err, tc.want)
		}
	}
}

// Vertex AI: a publisher's URL for Anthropic's and Google's models, auth
// google, which sends no key.
func TestVertexUpstream(t *testing.T) {
	for _, tc := range []struct{ upstream, want string }{
		{`{name: a, protocol: anthropic, url: "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic", auth: google}`, ""},
		{`{name: a, protocol: gemini, url: "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google", auth: google}`, ""},
		{`{name: a, protocol: anthropic, url: "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google"}`, "must end with the API version"},
		{`{name: a, protocol: gemini, url: "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/google", auth: google, api_key: k}`, "api_key: is not sent with auth: google"},
		{`{name: a, url: "https://x/v1", auth: kerberos}`, "auth:"},
		{`{name: a, protocol: bedrock, url: "https://bedrock-runtime.us-east-1.amazonaws.com", auth: aws}`, ""},
		{`{name: a, protocol: bedrock, url: "https://bedrock-runtime.us-east-1.amazonaws.com/openai/v1", auth: aws}`, "must be the runtime's endpoint without a path"},
	} {
		_, err := Parse([]byte("upstreams: ["+tc.upstream+"]\nroutes: [{model: m, upstream: a}]\n"), env(nil))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.upstream, err, tc.want)
		}
	}
}

// The in-memory stores' default bounds are shares of the memory limit
// (server.memory_limit, or the container's the binary reads): a fifth for
// responses (each key a quarter of that), a tenth for remembered
// reasoning, each at most its default; a bound the config sets is kept.
func TestFitMemory(t *testing.T) {
	load := func(yaml string) *Config {
		c, err := Parse([]byte(yaml+`
upstreams: [{name: a, url: "http://127.0.0.1:1/v1"}]
routes: [{model: m, upstream: a}]
`), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := load(`server: {memory_limit: 536870912}`)
	if c.Responses.MaxBytes != 107374182 || c.Responses.MaxBytesPerKey != 107374182/4 || c.ReasoningMaxBytes() != 53687091 {
		t.Errorf("512Mi: responses %d (per key %d), reasoning %d", c.Responses.MaxBytes, c.Responses.MaxBytesPerKey, c.ReasoningMaxBytes())
	}
	c = load(``)
	if c.Responses.MaxBytes != DefaultResponsesMaxBytes || c.ReasoningMaxBytes() != DefaultReasoningMaxBytes {
		t.Errorf("no limit: responses %d, reasoning %d", c.Responses.MaxBytes, c.ReasoningMaxBytes())
	}
	c.FitMemory(268435456) // the sidecar's 256Mi, read from the cgroup
	if c.Responses.MaxBytes != 53687091 || c.ReasoningMaxBytes() != 26843545 {
		t.Errorf("256Mi: responses %d, reasoning %d", c.Responses.MaxBytes, c.ReasoningMaxBytes())
	}
	c = load(`responses: {max_bytes: 300000000, max_bytes_per_key: 1000000}`)
	c.FitMemory(536870912)
	if c.Responses.MaxBytes != 300000000 || c.Responses.MaxBytesPerKey != 1000000 {
		t.Errorf("configured bounds changed: %d %d", c.Responses.MaxBytes, c.Responses.MaxBytesPerKey)
	}
	if _, err := Parse([]byte("server: {memory_limit: 1000}\nupstreams: [{name: a, url: \"http://127.0.0.1:1/v1\"}]\nroutes: [{model: m, upstream: a}]\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "server.memory_limit") {
		t.Errorf("a limit of 1000 bytes: %v", err)
	}
}

// One run reports every problem of the file, each with its field path and
// line, in the config's words: a variable not set does not hide the rest,
// an unknown key names the known one it resembles, a value of the wrong
// kind says what the field takes, and what the start would refuse
// (listen without a port) is refused here.
func TestEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte(`listen: 8080
upstreams:
  - name: a
    url: "${UPSTREAM_URL}"
    conect_timeout: 5s
    header_timeout: soon
routes:
  - {model: m, upstream: nope, retries: many}
  - {model: n, upstream: a, fallback: [m]}
`), env(nil))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := []string{
		"upstreams[0].url: environment variable UPSTREAM_URL is not set",
		"upstreams[0].conect_timeout: unknown key; did you mean connect_timeout? (line 5)",
		`upstreams[0].header_timeout: must be a duration such as 30s, 1m or 1h30m, not "soon" (line 6)`,
		`routes[0].retries: must be a whole number, not "many" (line 8)`,
		"routes[1].fallback: unknown key; did you mean fallbacks? (line 9)",
		`listen: must be host:port, such as 127.0.0.1:8080 or :8080 (every interface), got "8080"`,
		`routes[0].upstream: "nope" is not the name of any entry in upstreams`,
	}
	for _, w := range want {
		if !slices.Contains(ce.Problems, w) {
			t.Errorf("no problem %q in:\n  %s", w, strings.Join(ce.Problems, "\n  "))
		}
	}
	if len(ce.Problems) != len(want) {
		t.Errorf("%d problems, want %d (nothing said twice):\n  %s", len(ce.Problems), len(want), strings.Join(ce.Problems, "\n  "))
	}
	for _, s := range ce.Problems {
		if strings.Contains(s, "config.") || strings.Contains(s, "!!str") || strings.Contains(s, "time.Duration") {
			t.Errorf("a problem in Go's words: %q", s)
		}
	}
}

// ${NAME:-default} is the default when NAME is not set, NAME's value when
// it is; ${NAME} unset is a problem.
func TestEnvDefault(t *testing.T) {
	cfg := "upstreams: [{name: a, url: \"http://x\", api_key: \"${KEY:-}\"}, {name: b, url: \"${URL:-http://y}\"}]\nroutes: [{model: m, upstream: a}]\n"
	c, err := Parse([]byte(cfg), env(nil))
	if err != nil || c.Upstreams[0].APIKey != "" || c.Upstreams[1].URL != "http://y" {
		t.Fatalf("unset: %v %+v", err, c)
	}
	c, err = Parse([]byte(cfg), env(map[string]string{"KEY": "sk-1", "URL": "http://z"}))
	if err != nil || c.Upstreams[0].APIKey != "sk-1" || c.Upstreams[1].URL != "http://z" {
		t.Fatalf("set: %v %+v", err, c)
	}
}

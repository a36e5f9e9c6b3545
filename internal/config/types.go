package config

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
	"go.yaml.in/yaml/v3"
)

// Config is the whole configuration tree.
type Config struct {
	// Listen is the main listener's address (chat API). Default ":8080".
	Listen string `yaml:"listen"`
	// AdminListen is the admin listener's address (/metrics, /healthz,
	// /readyz). Default "127.0.0.1:9090": /metrics lists client keys and
	// their spend, so it is never public unless configured so (a pod
	// sets ":9090" for its probes and scrape).
	AdminListen string `yaml:"admin_listen"`
	// Metrics configures the Prometheus metrics.
	Metrics Metrics `yaml:"metrics"`
	Log     Log     `yaml:"log"`
	Server  Server  `yaml:"server"`
	// Sessions says how budgets' max_calls identify and count sessions.
	Sessions Sessions `yaml:"sessions"`
	// Keys are the client API keys. With none, the gateway is open.
	Keys []Key `yaml:"keys"`
	// State says where counters (max_calls, rate limits) and remembered
	// reasoning live: memory (one replica) or Redis (shared).
	State State `yaml:"state"`
	// Responses configures the Responses API's stored responses.
	Responses Responses `yaml:"responses"`
	// Upstreams are the providers requests can go to.
	Upstreams []Upstream `yaml:"upstreams"`
	// Routes map client model names to an upstream and its model name.
	Routes []Route `yaml:"routes"`
	// Pricing prices upstream model names (or patterns, * for any
	// characters): the cost of each response, toolgate_cost_usd_total and
	// keys' max_cost_usd.
	Pricing map[string]Price `yaml:"pricing"`
	// Telemetry configures OpenTelemetry traces (off by default).
	Telemetry Telemetry `yaml:"telemetry"`
	// Console configures the live console on the admin listener (/ui/).
	Console Console `yaml:"console"`
}

// Console is the read-only live console on the admin listener.
type Console struct {
	// Enabled serves /ui/ on the admin listener. Default true.
	Enabled *bool `yaml:"enabled"`
	// Recent is how many requests the console keeps for its list and
	// inspector (their outline, never their content); 0 keeps none.
	// Default 100.
	Recent *int `yaml:"recent"`
	// Inspect is what the inspector keeps of a repaired transcript's
	// messages: outline (roles and call ids, the default) or content (also
	// each message's text, clipped, with anything that looks like a key
	// or token redacted).
	Inspect string `yaml:"inspect"`
	// Token, when set, is asked of every console request (Authorization:
	// Bearer, or ?token= for the page and its live feed): set it when the
	// admin listener is reachable beyond the host.
	Token string `yaml:"token"`
}

// MaxConsoleRecent bounds console.recent: each request kept is its
// outline, a few hundred bytes.
const MaxConsoleRecent = 10000

// On reports whether the console is served.
func (c Console) On() bool { return c.Enabled == nil || *c.Enabled }

// Kept is how many requests the console keeps.
func (c Console) Kept() int {
	if c.Recent == nil {
		return 100
	}
	return max(*c.Recent, 0)
}

// Key is one client API key, configured by its SHA-256 (hex) — never the
// key itself.
type Key struct {
	// Name labels the key in logs and metrics.
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the key (e.g. `printf %s "$KEY" | sha256sum`).
	SHA256 string `yaml:"sha256"`
	// Models are the model names or patterns (* wildcards) the key may use;
	// empty means every model.
	Models []string `yaml:"models"`
	// Budget applies with the route's: the stricter value wins.
	Budget *Budget `yaml:"budget"`
	// RateLimit caps the key's requests and tokens per minute (429 beyond).
	RateLimit RateLimit `yaml:"rate_limit"`
	// OrgWide narrows the org_wide kinds of the routes this key uses to
	// those it lists too (absent: the route's).
	OrgWide []string `yaml:"org_wide"`
	// HostedTools narrows the hosted_tools of the routes this key uses to
	// those it lists too (absent: the route's). A key with max_cost_usd
	// gets none: hosted tools are billed per use, and have no price here.
	HostedTools []string `yaml:"hosted_tools"`
}

// RateLimit is a key's per-minute limits; 0 (the default) is no limit.
type RateLimit struct {
	// RequestsPerMinute counts requests admitted to an upstream.
	RequestsPerMinute int64 `yaml:"requests_per_minute"`
	// TokensPerMinute counts the upstream's reported usage (total_tokens);
	// a request is admitted while the minute's count is below it.
	TokensPerMinute int64 `yaml:"tokens_per_minute"`
}

// State configures where shared state lives.
type State struct {
	// Store is memory (the default) or redis.
	Store Enum[state.Kind] `yaml:"store"`
	// RedisURL is redis://[user:password@]host:port/db (rediss:// for TLS),
	// usually "${REDIS_URL}". Required with store: redis. Several URLs,
	// comma-separated, are the seeds of a Redis Cluster.
	RedisURL string `yaml:"redis_url"`
	// Cluster says the one RedisURL is a node of a Redis Cluster.
	Cluster bool `yaml:"cluster"`
	// Prefix starts every Redis key. Default "toolgate:".
	Prefix string `yaml:"prefix"`
	// Timeout bounds each Redis operation. Default 250ms.
	Timeout time.Duration `yaml:"timeout"`
	// OnError is what a request does when Redis cannot be reached:
	// fail_open (the default: admitted, logged and counted) or fail_closed
	// (refused with 503).
	OnError Enum[state.OnError] `yaml:"on_error"`
}

// Responses configures POST /v1/responses' stored responses: what
// previous_response_id, GET and DELETE /v1/responses/{id} read.
type Responses struct {
	// Store is none (the default: nothing kept; previous_response_id is
	// refused), memory (in this replica: at most 10,000 responses and
	// MaxBytes, a quarter of each per client key by default) or
	// redis (the state store's Redis; state.store must be redis).
	Store Enum[state.Kind] `yaml:"store"`
	// TTL is how long a stored response is kept. Default 24h.
	TTL time.Duration `yaml:"ttl"`
	// MaxBytes bounds the memory store's bytes. Default 256 MiB, or a
	// fifth of server.memory_limit when that is less.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxBytesPerKey is each client key's share of MaxBytes: a key over
	// it loses its own oldest responses first. Default a quarter of
	// MaxBytes.
	MaxBytesPerKey int64 `yaml:"max_bytes_per_key"`
	// maxBytesSet and perKeySet: the config sets them (FitMemory leaves
	// them as they are).
	maxBytesSet, perKeySet bool
	// SealKey is the secret the tags of the encrypted reasoning handed to
	// Responses clients are made with (an HMAC of the client key, the
	// upstream and the content), at least 16 characters, e.g.
	// ${TOOLGATE_SEAL_KEY}: every replica must share it. Without it each
	// process makes its own at start, and an item another replica handed
	// out, or this one before a restart, goes back without its reasoning.
	SealKey string `yaml:"seal_key"`
}

// Sessions configures the session a request belongs to, for max_calls.
type Sessions struct {
	// Header carries the session id; without it the request's "user" field
	// is the session. Default X-Session-Id.
	Header string `yaml:"header"`
	// Window is how long a session's call count lasts. Default 1h.
	Window time.Duration `yaml:"window"`
}

// Metrics configures the Prometheus metrics.
type Metrics struct {
	// KeyLabels labels the per-key metrics (spend, tokens, rejections,
	// in-flight) with each key's name; false labels them with a
	// pseudonym (key- and 8 hex digits of the name's SHA-256). Default
	// true. Read at start-up only.
	KeyLabels *bool `yaml:"key_labels"`
}

// Telemetry configures OpenTelemetry traces: off unless OTLPEndpoint (or
// the standard OTEL_EXPORTER_OTLP_* environment) names a collector.
type Telemetry struct {
	// OTLPEndpoint is the collector's URL: http://host:4317 for gRPC,
	// http://host:4318 for HTTP (/v1/traces is added when it has no path).
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// Protocol is grpc (the default) or http/protobuf.
	Protocol Enum[telemetry.Protocol] `yaml:"protocol"`
	// CaptureContent puts the request's messages on the server span
	// (gen_ai.input.messages). Off: spans carry no message content.
	CaptureContent bool `yaml:"capture_content"`
}

// Log configures the JSON logs.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level Enum[observe.Level] `yaml:"level"`
	// FlushInterval buffers log lines and writes them at least this often
	// (and whenever 256 KiB are pending): one write per batch instead of
	// one per request. 0s writes every line at once. Default 1s.
	FlushInterval *time.Duration `yaml:"flush_interval"`
}

// Server holds the listeners' limits and timeouts.
type Server struct {
	// ReadHeaderTimeout bounds reading a request's headers. Default 10s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// IdleTimeout closes idle keep-alive connections. Default 120s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// DrainTimeout is how long in-flight requests may run after SIGTERM.
	// Default 30s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// WriteIdleTimeout cuts a client that accepts no bytes for this long
	// during one write; a stream that is merely paused is never cut.
	// Default 60s.
	WriteIdleTimeout time.Duration `yaml:"write_idle_timeout"`
	// MaxBodyBytes caps a request body, measured after decoding a
	// Content-Encoding (413 beyond). Default 10 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MemoryLimit is the memory the gateway may use, in bytes. Default
	// the container's (its cgroup's memory limit, read at start; none
	// outside a container). With one, the runtime's soft limit
	// (GOMEMLIMIT, unless set) is 90% of it, and the in-memory stores'
	// default bounds are shares of it: responses.max_bytes a fifth, the
	// remembered reasoning a tenth (at most their defaults).
	MemoryLimit int64 `yaml:"memory_limit"`
	// ReadBodyTimeout bounds reading a request's body once its headers
	// are in (408 beyond). Default 30s.
	ReadBodyTimeout time.Duration `yaml:"read_body_timeout"`
	// MaxPendingRequests caps the connections that have not finished
	// sending their request (headers and body) at once; beyond it a new
	// connection is closed at once, and a keep-alive connection's next
	// request gets 503. Default 4096.
	MaxPendingRequests int `yaml:"max_pending_requests"`
	// MaxPendingPerIP is the same cap per client address (grouped by
	// PendingIPv4Prefix and PendingIPv6Prefix). Default 1024.
	MaxPendingPerIP int `yaml:"max_pending_per_ip"`
	// MaxPendingKeyless caps the pending connections not yet known to
	// carry a client key (every connection until its headers are read):
	// when it is reached, the oldest of them is closed to make room, so a
	// flood of connections that never send their headers cannot lock
	// keyed clients out. Default half of MaxPendingRequests.
	MaxPendingKeyless int `yaml:"max_pending_keyless"`
	// PendingIPv4Prefix and PendingIPv6Prefix are the prefix lengths
	// that group client addresses for MaxPendingPerIP: default 32 (each
	// IPv4 address) and 64 (an IPv6 /64, what one host is usually
	// given).
	PendingIPv4Prefix int `yaml:"pending_ipv4_prefix"`
	PendingIPv6Prefix int `yaml:"pending_ipv6_prefix"`
	// MaxMessages caps a request's messages (400 beyond). Default 10,000.
	MaxMessages int `yaml:"max_messages"`
	// MaxTools caps the tools a request declares (400 beyond). Default 512.
	MaxTools int `yaml:"max_tools"`
	// Pprof serves Go's profiles under /debug/pprof/ on the admin listener.
	// Off by default: keep the admin port private when it is on.
	Pprof bool `yaml:"pprof"`
}

// Upstream is one provider endpoint: one speaking the OpenAI
// chat-completions wire, Anthropic's Messages API, Google's Gemini API,
// OpenAI's Responses API or Amazon Bedrock's Converse API.
type Upstream struct {
	// Name identifies the upstream in routes, logs and metrics.
	Name string `yaml:"name"`
	// Protocol is the wire the upstream speaks: openai (chat completions,
	// the default), anthropic (the Messages API), gemini (the Gemini API),
	// responses (OpenAI's Responses API) or bedrock (Amazon Bedrock's
	// Converse API); requests and answers of the last four are translated,
	// clients keep speaking chat completions.
	Protocol Enum[translate.Protocol] `yaml:"protocol"`
	// URL is the API base URL, e.g. https://api.openai.com/v1; the gateway
	// appends /chat/completions (protocol anthropic: /messages, e.g. to
	// https://api.anthropic.com/v1; protocol gemini:
	// /models/{model}:generateContent, e.g. to
	// https://generativelanguage.googleapis.com/v1beta; protocol bedrock:
	// /model/{model}/converse, to the runtime's endpoint without a path,
	// https://bedrock-runtime.us-east-1.amazonaws.com). Required unless
	// Simulator is set. A path segment {model} stands for the model each
	// request is sent for (the route's upstream_model, else the client's),
	// path-escaped: Azure OpenAI's deployment URLs,
	// https://R.openai.azure.com/openai/deployments/{model}.
	URL string `yaml:"url"`
	// APIVersion is the api-version query parameter every request to
	// this upstream carries (Azure OpenAI's deployment URLs require one,
	// e.g. 2024-10-21). Default none.
	APIVersion string `yaml:"api_version"`
	// AnthropicVersion is the anthropic-version header of a protocol
	// anthropic upstream. Default 2023-06-01.
	AnthropicVersion string `yaml:"anthropic_version"`
	// DefaultMaxTokens is the max_tokens sent to a protocol anthropic
	// upstream (which requires one) or bedrock upstream (its maxTokens)
	// when the request and the route's budget set no output limit.
	// Default 4096.
	DefaultMaxTokens int `yaml:"default_max_tokens"`
	// Simulator makes this upstream the built-in simulated provider, started
	// by the gateway on a loopback port; URL must then be empty.
	Simulator bool `yaml:"simulator"`
	// APIKey is the upstream's key, usually "${SOME_ENV_VAR}". Optional.
	APIKey string `yaml:"api_key"`
	// Auth is how the upstream is authenticated: key (APIKey in
	// AuthHeader, the default), google (Google Application Default
	// Credentials, an OAuth token as the bearer: Vertex AI) or azure
	// (a Microsoft Entra ID token as the bearer: Azure OpenAI) or aws
	// (AWS Signature Version 4 with the default credentials chain:
	// Amazon Bedrock).
	Auth Enum[upstream.Auth] `yaml:"auth"`
	// Region is the AWS region requests are signed for with auth: aws.
	// Default the one the URL's host names (bedrock-runtime.REGION.amazonaws.com),
	// else the environment's (AWS_REGION).
	Region string `yaml:"region"`
	// AuthHeader is the header that carries APIKey. "Authorization" (the
	// default; x-api-key for protocol anthropic, x-goog-api-key for
	// protocol gemini) sends "Bearer <key>"; any other header sends the key
	// as is (e.g. "api-key" for Azure).
	AuthHeader string `yaml:"auth_header"`
	// Headers are extra headers sent on every request to this upstream.
	Headers map[string]string `yaml:"headers"`
	// ForwardHeaders are client headers forwarded to this upstream besides
	// the few every upstream gets (User-Agent, Idempotency-Key,
	// OpenAI-Beta, traceparent, tracestate), e.g. OpenRouter's X-Title and
	// HTTP-Referer. Every other client header is dropped.
	ForwardHeaders []string `yaml:"forward_headers"`
	// ConnectTimeout bounds dialing and the TLS handshake. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// HeaderTimeout bounds the wait for response headers. Default 5m.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	// ReadIdleTimeout bounds a silence of the upstream once its response
	// has started (no byte, not even a keep-alive comment): the response
	// is then broken off as incomplete. Default 5m.
	ReadIdleTimeout time.Duration `yaml:"read_idle_timeout"`
	// MaxErrorBodyBytes caps how much of an error body is captured. Default 64 KiB.
	MaxErrorBodyBytes int64 `yaml:"max_error_body_bytes"`
	// MaxResponseBytes caps a non-streamed response body. Default 32 MiB.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// MaxEventBytes caps one SSE event from this upstream. Default 8 MiB.
	MaxEventBytes int `yaml:"max_event_bytes"`
	// ToolCallContent is how the content of assistant messages that carry
	// tool_calls is sent to this upstream: keep (as the client sent it, the
	// default), null ("" becomes null) or empty (null or absent becomes "").
	ToolCallContent Enum[repair.ContentMode] `yaml:"tool_call_content"`
	// OutputLimitField is the field a budget's output limit is injected
	// in when a request has none: max_tokens (the default) or
	// max_completion_tokens.
	OutputLimitField Enum[wire.OutputLimit] `yaml:"output_limit_field"`
	// ReasoningField is where this upstream puts reasoning in responses:
	// reasoning_content (the default), reasoning, or think (inline
	// <think>…</think> in the text). Configured, never guessed.
	ReasoningField Enum[wire.ReasoningSource] `yaml:"reasoning_field"`
	// RestoreReasoning makes the gateway remember each assistant turn's
	// reasoning and put it back into later requests whose assistant
	// messages lack it (DeepSeek's thinking mode requires it back).
	RestoreReasoning bool `yaml:"restore_reasoning"`
	// RefusesForcedToolChoice says this upstream refuses a forced
	// tool_choice (required or a named function) while thinking.
	RefusesForcedToolChoice bool `yaml:"refuses_forced_tool_choice"`
	// NoStreamOptions says this upstream refuses the stream_options field
	// (docs/quirks.md C28: Azure with data sources, Mistral, some Bedrock relays):
	// the gateway removes it, and counts tokens only if the upstream
	// reports usage unasked. By default the gateway asks every stream for
	// usage (stream_options.include_usage), for the token metrics and
	// limits.
	NoStreamOptions bool `yaml:"no_stream_options"`
	// MaxToolCallIDLen is the longest tool-call id this upstream takes
	// (docs/quirks.md C04: 40 for OpenAI): longer ids in a request's history are
	// rewritten, consistently in the calls and their replies, for that
	// request only. 0 (the default) is no limit; otherwise at least 8.
	MaxToolCallIDLen int `yaml:"max_tool_call_id_len"`
	// Quirks lists the stream normalizations applied to this upstream's
	// responses: "all" (the default), "strict" (none: every protocol
	// departure is an error), or a list of the names in quirkNames.
	Quirks Quirks `yaml:"quirks"`
	// Normalizations are Quirks as the normalizer reads them, parsed at
	// load.
	Normalizations wire.Quirks `yaml:"-"`
}

// Quirks is an upstream's list of normalizations; in YAML a single word
// ("all", "strict") or a list of names.
type Quirks []string

// UnmarshalYAML accepts a scalar or a sequence.
func (q *Quirks) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*q = Quirks{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*q = list
	return nil
}

// Passthrough is a route's passthrough: every path, or a list.
type Passthrough struct {
	All   bool
	Paths []PathRule
}

// UnmarshalYAML accepts true, false or a list of paths.
func (p *Passthrough) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&p.All)
	}
	return n.Decode(&p.Paths)
}

// PathRule is a /v1 path pattern a route forwards (* matches any run of
// characters) and the methods it forwards on it.
type PathRule struct {
	Path string `yaml:"path"`
	// Methods are the HTTP methods forwarded; default GET, POST, DELETE.
	Methods []string `yaml:"methods"`
}

// UnmarshalYAML accepts a path alone, or {path, methods}.
func (r *PathRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&r.Path)
	}
	type plain PathRule
	return n.Decode((*plain)(r))
}

// Route sends the requests for a model name (or pattern) to an upstream.
type Route struct {
	// Name labels the route in logs and metrics. Default: Model.
	Name string `yaml:"name"`
	// Model is the client's model name, or a pattern where * matches any run
	// of characters.
	Model string `yaml:"model"`
	// Upstream is the name of an entry in upstreams. With Upstreams it is
	// set to the first deployment's name at load.
	Upstream string `yaml:"upstream"`
	// Upstreams are several deployments serving the route, spread by
	// weight over the healthy ones (instead of Upstream; at load a single
	// Upstream becomes one deployment of weight 1).
	Upstreams []Deployment `yaml:"upstreams"`
	// Cooldown is how long a deployment that answered 429 or 5xx, or could
	// not be reached, is left out (its Retry-After when it sends one).
	// Default 30s.
	Cooldown time.Duration `yaml:"cooldown"`
	// listed: the file gave upstreams (not a single upstream); both: it
	// gave upstream too (an error Validate reports).
	listed, both bool
	// UpstreamModel is the model name sent upstream; empty sends the
	// client's name unchanged.
	UpstreamModel string `yaml:"upstream_model"`
	// UpstreamStore lets an upstream of protocol responses keep the
	// responses (store: true). By default it keeps nothing (store: false)
	// and hands its reasoning back encrypted, which the gateway sends back
	// on the next turn.
	UpstreamStore bool `yaml:"upstream_store"`
	// UpstreamPrevious, with upstream_store, passes a Responses client's
	// previous_response_id on to the upstream (as the upstream's own id
	// for that response) and sends only the new input, when the request
	// goes to the deployment that answered it and repair changed nothing
	// before the new input; otherwise, and by default, the gateway expands
	// the conversation from its own store and sends it whole.
	UpstreamPrevious bool `yaml:"upstream_previous"`
	// RefuseHostedTools refuses (400) a Responses API request that
	// declares a hosted tool (web_search, file_search, code_interpreter,
	// …) when the route's upstream is of another protocol, which cannot
	// run it. By default such a tool is left out, named in the
	// X-Toolgate-Dropped header and counted, so that a client declaring
	// one by default (Codex's web_search) works on every route.
	RefuseHostedTools bool `yaml:"refuse_hosted_tools"`
	// OrgWide are the kinds of objects the upstream keeps for its whole
	// organization that a request on this route may name, and the billed
	// service tiers: files, items, vector_stores, containers, mcp_servers,
	// service_tier. By default none: a request naming one (an
	// item_reference, a file_id, file_search's vector stores, an MCP
	// server, a container, service_tier: priority) is refused with a 400
	// naming the member, since every client key of the route would reach
	// them with the upstream's key.
	OrgWide []string `yaml:"org_wide"`
	// HostedTools are the hosted tools the upstream may run at the
	// gateway's cost on this route, by type (web_search, file_search,
	// code_interpreter, image_generation, mcp, web_fetch, code_execution;
	// a type also allows its variants: web_search allows
	// web_search_preview and web_search_20250305). By default none: a
	// request's hosted tool is left out, named in X-Toolgate-Dropped and
	// counted, and the request served without it.
	HostedTools []string `yaml:"hosted_tools"`
	// Repair is what the route does with a transcript whose tool calls and
	// replies are not paired: fix (the default), reject (400) or off.
	Repair Enum[repair.Mode] `yaml:"repair"`
	// Normalize switches the request normalizations; each defaults to on.
	Normalize Normalize `yaml:"normalize"`
	// Policy is the completion policy: session (the default), default or off.
	Policy Enum[policy.Mode] `yaml:"policy"`
	// EnforceParallelToolCalls makes parallel_tool_calls: false with more
	// than one call a violation; by default the field is only sent upstream.
	EnforceParallelToolCalls bool `yaml:"enforce_parallel_tool_calls"`
	// ValidateArguments checks each completed call's arguments against its
	// tool's JSON Schema: off, annotate (the default: log and count
	// failures) or reject (a failure ends the response as a violation).
	ValidateArguments Enum[policy.Arguments] `yaml:"validate_arguments"`
	// ToolCalls is how tool-call fragments reach the client: stream (the
	// default: forwarded as soon as their call's id and name are known) or
	// buffer (held until the response is complete and judged). reject
	// argument validation implies buffer.
	ToolCalls Enum[policy.Delivery] `yaml:"tool_calls"`
	// Retries is how many more attempts a request gets when one fails
	// before anything reached the client: no connection, a 429 or 5xx, a
	// response that broke off or violates the completion policy (0 to 5;
	// default 0). A request that failed on a reused connection before any
	// response byte is always resent once on a fresh one, apart from these.
	Retries int `yaml:"retries"`
	// Fallbacks are route names tried in order, each the way this route
	// is (its upstream, model, budget, retries), when this route's
	// attempts failed before anything reached the client for a reason of
	// the upstream's (no connection, a timeout, a 429, a 5xx, a broken or
	// refused response). A fallback's own fallbacks are not followed.
	Fallbacks []string `yaml:"fallbacks"`
	// Passthrough lets the route forward other /v1 paths than chat
	// completions and responses, as they are: true (every path) or a list
	// of paths (* matches any run of characters, "/v1/files*").
	// /v1/embeddings, /v1/completions and /v1/moderations are forwarded on
	// every route whose upstream speaks openai.
	Passthrough Passthrough `yaml:"passthrough"`
	// Paths are the /v1 paths this route serves for requests whose body
	// names no model (GET /v1/files, uploads), as in Passthrough. The first
	// route whose Paths match serves them. Each is a path pattern or
	// {path, methods} (default GET, POST, DELETE).
	Paths []PathRule `yaml:"paths"`
	// RetryBackoff is the wait before the first retry, doubled at each
	// one (±20% jitter). Default 250ms.
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	// RetryMaxWait is the longest wait before a retry, an upstream's
	// Retry-After included: a longer one ends the retries. Default 10s.
	RetryMaxWait time.Duration `yaml:"retry_max_wait"`
	// Reasoning maps reasoning levels onto the upstream's request fields.
	Reasoning Reasoning `yaml:"reasoning"`
	// Budget is the route's task budget (docs/spec.md §5); absent means none.
	Budget *Budget `yaml:"budget"`
}

// Deployment is one upstream of a route with several, and its share.
type Deployment struct {
	Name string `yaml:"name"`
	// Weight is its share of the requests among the healthy deployments.
	// Default 1; 0 takes requests only when no other deployment can.
	Weight *int `yaml:"weight"`
}

// Budget is a route's budget: a preset (small, medium or large; medium
// when absent) and exact values that override it. A value is a number or
// "unlimited"; 0 is kept as 0.
type Budget struct {
	Preset          Enum[budget.Preset] `yaml:"preset"`
	MaxCalls        *Limit              `yaml:"max_calls"`
	MaxInputChars   *Limit              `yaml:"max_input_chars"`
	MaxOutputChars  *Limit              `yaml:"max_output_chars"`
	MaxOutputTokens *Limit              `yaml:"max_output_tokens"`
	CallTimeoutMs   *Limit              `yaml:"call_timeout_ms"`
	// OnInputOver is what a transcript over max_input_chars does: refuse
	// (400, the default) or trim (whole oldest turns).
	OnInputOver Enum[budget.InputAction] `yaml:"on_input_over"`
	// MaxCostUSD is a key's spend per CostWindow, priced by pricing: a
	// request is refused (429 insufficient_quota) once it is reached.
	// Keys only.
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	// CostWindow is day (the default) or month: a calendar day or month
	// in UTC.
	CostWindow Enum[budget.Period] `yaml:"cost_window"`
}

// Price is an upstream model's price in dollars per million tokens.
type Price struct {
	Input float64 `yaml:"input"`
	// CachedInput prices prompt tokens read from the provider's cache
	// (prompt_tokens_details.cached_tokens); default the input price.
	CachedInput *float64 `yaml:"cached_input"`
	Output      float64  `yaml:"output"`
}

// Limit is a budget value: a non-negative number, or -1 for "unlimited".
type Limit int

// UnmarshalYAML accepts a number or the word unlimited.
func (l *Limit) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "unlimited" {
		*l = -1
		return nil
	}
	var v int
	if err := n.Decode(&v); err != nil || v < 0 {
		return fmt.Errorf("line %d: a budget value must be a non-negative number or unlimited, got %q", n.Line, n.Value)
	}
	*l = Limit(v)
	return nil
}

// Reasoning is a route's reasoning configuration (docs/spec.md §4). With no format
// nothing is sent.
type Reasoning struct {
	// Format is reasoning-effort, thinking, enable-thinking,
	// thinking-budget or custom.
	Format Enum[policy.Format] `yaml:"format"`
	// Level is the route's default: off, low, medium or high.
	Level Enum[policy.Level] `yaml:"level"`
	// ClientEffort lets the client's reasoning_effort choose the level.
	ClientEffort bool `yaml:"client_effort"`
	// Budgets overrides thinking-budget's budget_tokens per level.
	Budgets map[string]int `yaml:"budgets"`
	// Custom is, per level, the fields the custom format sends.
	Custom map[string]map[string]any `yaml:"custom"`
	// LevelBudgets and LevelCustom are Budgets and Custom by level,
	// parsed at load.
	LevelBudgets map[policy.Level]int            `yaml:"-"`
	LevelCustom  map[policy.Level]map[string]any `yaml:"-"`
	// Fields are explicit request-body fields; they win over generated ones.
	Fields map[string]any `yaml:"fields"`
	// Output is the field the client receives reasoning in:
	// reasoning_content (the default) or reasoning.
	Output Enum[wire.ReasoningMember] `yaml:"output"`
	// OnMiss is what a request does when reasoning to restore is not in the
	// store: send (the default: it goes as it is, counted and logged) or
	// disable_thinking (it goes with the route's format at level off).
	OnMiss Enum[policy.MissAction] `yaml:"on_miss"`
	// ForcedToolChoice is what a request with a forced tool_choice does on
	// an upstream that refuses one while thinking: auto (the default: send
	// tool_choice "auto" and let the completion policy enforce the
	// original) or disable_thinking (send it with thinking off).
	ForcedToolChoice Enum[policy.ForcedAction] `yaml:"forced_tool_choice"`
}

// Normalize switches the request normalizations that run before repair.
// An unset switch is on.
type Normalize struct {
	// ArgumentsToString turns tool-call arguments sent as an object into a string.
	ArgumentsToString *bool `yaml:"arguments_to_string"`
	// SynthesizeIDs gives calls with an empty or missing id a deterministic id.
	SynthesizeIDs *bool `yaml:"synthesize_ids"`
	// DedupeCallIDs removes or renames a call id made twice in one message.
	DedupeCallIDs *bool `yaml:"dedupe_call_ids"`
}

package config

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults for everything optional.
const (
	DefaultListen            = ":8080"
	DefaultAdminListen       = "127.0.0.1:9090"
	DefaultLogLevel          = "info"
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultDrainTimeout      = 30 * time.Second
	DefaultWriteIdleTimeout  = 60 * time.Second
	DefaultMaxBodyBytes      = 10 << 20
	DefaultReadBodyTimeout   = 30 * time.Second
	DefaultMaxPending        = 4096
	DefaultMaxPendingPerIP   = 1024
	DefaultConnectTimeout    = 10 * time.Second
	DefaultHeaderTimeout     = 5 * time.Minute
	DefaultMaxErrorBodyBytes = 64 << 10
	DefaultErrorBodyTimeout  = 5 * time.Second
	DefaultMaxResponseBytes  = 32 << 20
	DefaultMaxEventBytes     = 8 << 20
	DefaultAuthHeader        = "Authorization"
	DefaultAnthropicVersion  = "2023-06-01"
	DefaultMaxTokens         = 4096
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

	exact         map[string]*Route
	patterns      []*Route
	pricePatterns []string
	byName        map[string]*Upstream
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
	Store string `yaml:"store"`
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
	OnError string `yaml:"on_error"`
}

// Responses configures POST /v1/responses' stored responses: what
// previous_response_id, GET and DELETE /v1/responses/{id} read.
type Responses struct {
	// Store is none (the default: nothing kept; previous_response_id is
	// refused), memory (in this replica: at most 10,000 responses and
	// MaxBytes, a quarter of each per client key by default) or
	// redis (the state store's Redis; state.store must be redis).
	Store string `yaml:"store"`
	// TTL is how long a stored response is kept. Default 24h.
	TTL time.Duration `yaml:"ttl"`
	// MaxBytes bounds the memory store's bytes. Default 256 MiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxBytesPerKey is each client key's share of MaxBytes: a key over
	// it loses its own oldest responses first. Default a quarter of
	// MaxBytes.
	MaxBytesPerKey int64 `yaml:"max_bytes_per_key"`
}

// DefaultResponsesMaxBytes bounds the memory store of responses.
const DefaultResponsesMaxBytes = 256 << 20

// MayUse reports whether the key may use some model of a route's model
// name or pattern: its list allows the route's name, or a pattern of one
// matches the other's text (a key's "gpt-*" may use the route "*").
func (k *Key) MayUse(routeModel string) bool {
	if k.Allows(routeModel) {
		return true
	}
	for _, p := range k.Models {
		if GlobMatch(routeModel, p) {
			return true
		}
	}
	return false
}

// Allows reports whether the key may use model.
func (k *Key) Allows(model string) bool {
	if len(k.Models) == 0 {
		return true
	}
	for _, p := range k.Models {
		if GlobMatch(p, model) {
			return true
		}
	}
	return false
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
	Protocol string `yaml:"protocol"`
	// CaptureContent puts the request's messages on the server span
	// (gen_ai.input.messages). Off: spans carry no message content.
	CaptureContent bool `yaml:"capture_content"`
}

// Log configures the JSON logs.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
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
// chat-completions wire, or Anthropic's Messages API.
type Upstream struct {
	// Name identifies the upstream in routes, logs and metrics.
	Name string `yaml:"name"`
	// Protocol is the wire the upstream speaks: openai (chat completions,
	// the default) or anthropic (the Messages API: requests and answers
	// are translated, clients keep speaking chat completions).
	Protocol string `yaml:"protocol"`
	// URL is the API base URL, e.g. https://api.openai.com/v1; the gateway
	// appends /chat/completions (protocol anthropic: /messages, e.g. to
	// https://api.anthropic.com/v1). Required unless Simulator is set.
	URL string `yaml:"url"`
	// AnthropicVersion is the anthropic-version header of a protocol
	// anthropic upstream. Default 2023-06-01.
	AnthropicVersion string `yaml:"anthropic_version"`
	// DefaultMaxTokens is the max_tokens sent to a protocol anthropic
	// upstream (which requires one) when the request and the route's
	// budget set no output limit. Default 4096.
	DefaultMaxTokens int `yaml:"default_max_tokens"`
	// Simulator makes this upstream the built-in simulated provider, started
	// by the gateway on a loopback port; URL must then be empty.
	Simulator bool `yaml:"simulator"`
	// APIKey is the upstream's key, usually "${SOME_ENV_VAR}". Optional.
	APIKey string `yaml:"api_key"`
	// AuthHeader is the header that carries APIKey. "Authorization" (the
	// default) sends "Bearer <key>"; any other header sends the key as is
	// (e.g. "api-key" for Azure, "x-api-key").
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
	ToolCallContent string `yaml:"tool_call_content"`
	// OutputLimitField is the field a budget's output limit is injected
	// in when a request has none: max_tokens (the default) or
	// max_completion_tokens.
	OutputLimitField string `yaml:"output_limit_field"`
	// ReasoningField is where this upstream puts reasoning in responses:
	// reasoning_content (the default), reasoning, or think (inline
	// <think>…</think> in the text). Configured, never guessed.
	ReasoningField string `yaml:"reasoning_field"`
	// RestoreReasoning makes the gateway remember each assistant turn's
	// reasoning and put it back into later requests whose assistant
	// messages lack it (DeepSeek's thinking mode requires it back).
	RestoreReasoning bool `yaml:"restore_reasoning"`
	// RefusesForcedToolChoice says this upstream refuses a forced
	// tool_choice (required or a named function) while thinking.
	RefusesForcedToolChoice bool `yaml:"refuses_forced_tool_choice"`
	// NoStreamOptions says this upstream refuses the stream_options field
	// (QUIRKS C28: Azure with data sources, Mistral, some Bedrock relays):
	// the gateway removes it, and counts tokens only if the upstream
	// reports usage unasked. By default the gateway asks every stream for
	// usage (stream_options.include_usage), for the token metrics and
	// limits.
	NoStreamOptions bool `yaml:"no_stream_options"`
	// MaxToolCallIDLen is the longest tool-call id this upstream takes
	// (QUIRKS C04: 40 for OpenAI): longer ids in a request's history are
	// rewritten, consistently in the calls and their replies, for that
	// request only. 0 (the default) is no limit; otherwise at least 8.
	MaxToolCallIDLen int `yaml:"max_tool_call_id_len"`
	// Quirks lists the stream normalizations applied to this upstream's
	// responses: "all" (the default), "strict" (none: every protocol
	// departure is an error), or a list of the names in quirkNames.
	Quirks Quirks `yaml:"quirks"`
}

// quirkNames are the stream normalizations an upstream can switch on.
var quirkNames = []string{"missing_index", "index_reuse", "repeated_name", "arguments_object", "finish_reason", "missing_finish_reason", "no_done", "chunks", "usage", "missing_id", "content_blocks", "post_finish"}

// QuirkNames returns the names an upstream's quirks list may hold besides
// "all" and "strict".
func QuirkNames() []string { return slices.Clone(quirkNames) }

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

// DefaultPathMethods are the methods a path rule forwards unless it
// names its own.
var DefaultPathMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

// UnmarshalYAML accepts a path alone, or {path, methods}.
func (r *PathRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&r.Path)
	}
	type plain PathRule
	return n.Decode((*plain)(r))
}

// allows reports whether the rule matches path, and then whether it
// forwards method.
func (r PathRule) allows(method, path string) (matches, methodOK bool) {
	if !GlobMatch(r.Path, path) {
		return false, false
	}
	methods := r.Methods
	if len(methods) == 0 {
		methods = DefaultPathMethods
	}
	return true, slices.Contains(methods, method)
}

// defaultPassthrough are the paths every openai route forwards.
var defaultPassthrough = []PathRule{
	{Path: "/v1/embeddings", Methods: []string{http.MethodPost}},
	{Path: "/v1/completions", Methods: []string{http.MethodPost}},
	{Path: "/v1/moderations", Methods: []string{http.MethodPost}},
}

// MatchPath returns the first route whose paths serve path, for a
// request whose body names no model.
func (c *Config) MatchPath(path string) (*Route, bool) {
	for i := range c.Routes {
		for _, pat := range c.Routes[i].Paths {
			if GlobMatch(pat.Path, path) {
				return &c.Routes[i], true
			}
		}
	}
	return nil, false
}

// MethodsFor lists the methods the route's rules that match path
// forward on it, for a 405's Allow header.
func (r *Route) MethodsFor(path string) []string {
	var out []string
	for _, rules := range [][]PathRule{defaultPassthrough, r.Passthrough.Paths, r.Paths} {
		for _, rule := range rules {
			if GlobMatch(rule.Path, path) {
				methods := rule.Methods
				if len(methods) == 0 {
					methods = DefaultPathMethods
				}
				for _, m := range methods {
					if !slices.Contains(out, m) {
						out = append(out, m)
					}
				}
			}
		}
	}
	if r.Passthrough.All {
		for _, m := range DefaultPathMethods {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	return out
}

// Forwarding is what a route does with a /v1 path outside its own API.
type Forwarding uint8

const (
	NotForwarded     Forwarding = iota // no rule of the route matches the path
	Forwarded                          // a rule matches and forwards the method
	MethodNotAllowed                   // rules match, none forwards the method
)

// Forwards says whether the route forwards method on path (a normalized
// path, with no dot segment): a rule of its passthrough (every path with
// passthrough: true, and the default paths) or of its paths must match
// the path and allow the method. Paths only add the paths they list; they
// never widen what a route forwards beyond them.
func (r *Route) Forwards(method, path string) Forwarding {
	out := NotForwarded
	check := func(rules []PathRule) bool {
		for _, rule := range rules {
			matches, ok := rule.allows(method, path)
			if ok {
				out = Forwarded
				return true
			}
			if matches {
				out = MethodNotAllowed
			}
		}
		return false
	}
	all := []PathRule(nil)
	if r.Passthrough.All {
		all = []PathRule{{Path: "/v1/*"}}
	}
	for _, rules := range [][]PathRule{defaultPassthrough, r.Passthrough.Paths, r.Paths, all} {
		if check(rules) {
			break
		}
	}
	return out
}

// Has reports whether the normalization name is switched on.
func (q Quirks) Has(name string) bool {
	for _, v := range q {
		if v == name || v == "all" {
			return true
		}
	}
	return false
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
	// Repair is what the route does with a transcript whose tool calls and
	// replies are not paired: fix (the default), reject (400) or off.
	Repair string `yaml:"repair"`
	// Normalize switches the request normalizations; each defaults to on.
	Normalize Normalize `yaml:"normalize"`
	// Policy is the completion policy: session (the default), default or off.
	Policy string `yaml:"policy"`
	// EnforceParallelToolCalls makes parallel_tool_calls: false with more
	// than one call a violation; by default the field is only sent upstream.
	EnforceParallelToolCalls bool `yaml:"enforce_parallel_tool_calls"`
	// ValidateArguments checks each completed call's arguments against its
	// tool's JSON Schema: off, annotate (the default: log and count
	// failures) or reject (a failure ends the response as a violation).
	ValidateArguments string `yaml:"validate_arguments"`
	// ToolCalls is how tool-call fragments reach the client: stream (the
	// default: forwarded as soon as their call's id and name are known) or
	// buffer (held until the response is complete and judged). reject
	// argument validation implies buffer.
	ToolCalls string `yaml:"tool_calls"`
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
	// Budget is the route's task budget (SPEC §5); absent means none.
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
	Preset          string `yaml:"preset"`
	MaxCalls        *Limit `yaml:"max_calls"`
	MaxInputChars   *Limit `yaml:"max_input_chars"`
	MaxOutputChars  *Limit `yaml:"max_output_chars"`
	MaxOutputTokens *Limit `yaml:"max_output_tokens"`
	CallTimeoutMs   *Limit `yaml:"call_timeout_ms"`
	// OnInputOver is what a transcript over max_input_chars does: refuse
	// (400, the default) or trim (whole oldest turns).
	OnInputOver string `yaml:"on_input_over"`
	// MaxCostUSD is a key's spend per CostWindow, priced by pricing: a
	// request is refused (429 insufficient_quota) once it is reached.
	// Keys only.
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	// CostWindow is day (the default) or month: a calendar day or month
	// in UTC.
	CostWindow string `yaml:"cost_window"`
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

// Reasoning is a route's reasoning configuration (SPEC §4). With no format
// nothing is sent.
type Reasoning struct {
	// Format is reasoning-effort, thinking, enable-thinking,
	// thinking-budget or custom.
	Format string `yaml:"format"`
	// Level is the route's default: off, low, medium or high.
	Level string `yaml:"level"`
	// ClientEffort lets the client's reasoning_effort choose the level.
	ClientEffort bool `yaml:"client_effort"`
	// Budgets overrides thinking-budget's budget_tokens per level.
	Budgets map[string]int `yaml:"budgets"`
	// Custom is, per level, the fields the custom format sends.
	Custom map[string]map[string]any `yaml:"custom"`
	// Fields are explicit request-body fields; they win over generated ones.
	Fields map[string]any `yaml:"fields"`
	// Output is the field the client receives reasoning in:
	// reasoning_content (the default) or reasoning.
	Output string `yaml:"output"`
	// OnMiss is what a request does when reasoning to restore is not in the
	// store: send (the default: it goes as it is, counted and logged) or
	// disable_thinking (it goes with the route's format at level off).
	OnMiss string `yaml:"on_miss"`
	// ForcedToolChoice is what a request with a forced tool_choice does on
	// an upstream that refuses one while thinking: auto (the default: send
	// tool_choice "auto" and let the completion policy enforce the
	// original) or disable_thinking (send it with thinking off).
	ForcedToolChoice string `yaml:"forced_tool_choice"`
}

// reasoningProtected are the request fields reasoning may never set.
var reasoningProtected = []string{"model", "messages", "stream", "max_tokens", "max_completion_tokens"}

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

// IsPattern reports whether the route's model contains a wildcard.
func (r *Route) IsPattern() bool { return strings.Contains(r.Model, "*") }

// TargetModel returns the model name to send upstream for a client's model.
func (r *Route) TargetModel(clientModel string) string {
	if r.UpstreamModel != "" {
		return r.UpstreamModel
	}
	return clientModel
}

// Match returns the route for a client's model name: an exact route first,
// then the first pattern route that matches, in file order.
func (c *Config) Match(model string) (*Route, bool) {
	if r, ok := c.exact[model]; ok {
		return r, true
	}
	for _, r := range c.patterns {
		if GlobMatch(r.Model, model) {
			return r, true
		}
	}
	return nil, false
}

// Route returns the route named name.
func (c *Config) Route(name string) (*Route, bool) {
	for i := range c.Routes {
		if c.Routes[i].Name == name {
			return &c.Routes[i], true
		}
	}
	return nil, false
}

// Upstream returns the upstream with the given name.
func (c *Config) Upstream(name string) (*Upstream, bool) {
	u, ok := c.byName[name]
	return u, ok
}

// GlobMatch reports whether s matches pattern, where * matches any run of
// characters (including none) and every other character matches itself.
func GlobMatch(pattern, s string) bool {
	star, next := -1, 0 // last star position in pattern, and s index it resumed at
	p, i := 0, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, next = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			next++
			p, i = star+1, next
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func (c *Config) applyDefaults() {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.AdminListen == "" {
		c.AdminListen = DefaultAdminListen
	}
	if c.Metrics.KeyLabels == nil {
		on := true
		c.Metrics.KeyLabels = &on
	}
	if c.Log.FlushInterval == nil {
		d := time.Second
		c.Log.FlushInterval = &d
	}
	if c.Log.Level == "" {
		c.Log.Level = DefaultLogLevel
	}
	if c.Sessions.Header == "" {
		c.Sessions.Header = "X-Session-Id"
	}
	setDur(&c.Sessions.Window, time.Hour)
	if c.Responses.Store == "" {
		c.Responses.Store = "none"
	}
	setDur(&c.Responses.TTL, 24*time.Hour)
	if c.Responses.MaxBytes == 0 {
		c.Responses.MaxBytes = DefaultResponsesMaxBytes
	}
	if c.Responses.MaxBytesPerKey == 0 {
		c.Responses.MaxBytesPerKey = c.Responses.MaxBytes / 4
	}
	if c.State.Store == "" {
		c.State.Store = "memory"
	}
	if c.State.Prefix == "" {
		c.State.Prefix = "toolgate:"
	}
	setDur(&c.State.Timeout, 250*time.Millisecond)
	if c.State.OnError == "" {
		c.State.OnError = "fail_open"
	}
	s := &c.Server
	setDur(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDur(&s.IdleTimeout, DefaultIdleTimeout)
	setDur(&s.DrainTimeout, DefaultDrainTimeout)
	setDur(&s.WriteIdleTimeout, DefaultWriteIdleTimeout)
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	setDur(&s.ReadBodyTimeout, DefaultReadBodyTimeout)
	if s.MaxPendingRequests == 0 {
		s.MaxPendingRequests = DefaultMaxPending
	}
	if s.MaxPendingPerIP == 0 {
		s.MaxPendingPerIP = DefaultMaxPendingPerIP
	}
	if s.MaxPendingKeyless == 0 {
		s.MaxPendingKeyless = max(s.MaxPendingRequests/2, 1)
	}
	if s.PendingIPv4Prefix == 0 {
		s.PendingIPv4Prefix = 32
	}
	if s.PendingIPv6Prefix == 0 {
		s.PendingIPv6Prefix = 64
	}
	if s.MaxMessages == 0 {
		s.MaxMessages = 10000
	}
	if s.MaxTools == 0 {
		s.MaxTools = 512
	}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.Protocol == "" {
			u.Protocol = "openai"
		}
		if u.AuthHeader == "" {
			u.AuthHeader = DefaultAuthHeader
			if u.Protocol == "anthropic" {
				u.AuthHeader = "x-api-key"
			}
		}
		if u.Protocol == "anthropic" {
			if u.AnthropicVersion == "" {
				u.AnthropicVersion = DefaultAnthropicVersion
			}
			if u.DefaultMaxTokens == 0 {
				u.DefaultMaxTokens = DefaultMaxTokens
			}
		}
		setDur(&u.ConnectTimeout, DefaultConnectTimeout)
		setDur(&u.HeaderTimeout, DefaultHeaderTimeout)
		setDur(&u.ReadIdleTimeout, DefaultHeaderTimeout)
		if u.MaxErrorBodyBytes == 0 {
			u.MaxErrorBodyBytes = DefaultMaxErrorBodyBytes
		}
		if u.MaxResponseBytes == 0 {
			u.MaxResponseBytes = DefaultMaxResponseBytes
		}
		if u.MaxEventBytes == 0 {
			u.MaxEventBytes = DefaultMaxEventBytes
		}
		if u.ToolCallContent == "" {
			u.ToolCallContent = "keep"
		}
		if len(u.Quirks) == 0 {
			u.Quirks = Quirks{"all"}
		}
		if u.ReasoningField == "" {
			u.ReasoningField = "reasoning_content"
		}
		if u.OutputLimitField == "" {
			u.OutputLimitField = "max_tokens"
		}
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Name == "" {
			r.Name = r.Model
		}
		if r.Repair == "" {
			r.Repair = "fix"
		}
		if r.Policy == "" {
			r.Policy = "session"
		}
		if r.ValidateArguments == "" {
			r.ValidateArguments = "annotate"
		}
		setDur(&r.RetryBackoff, 250*time.Millisecond)
		setDur(&r.RetryMaxWait, 10*time.Second)
		setDur(&r.Cooldown, 30*time.Second)
		r.listed, r.both = len(r.Upstreams) > 0, len(r.Upstreams) > 0 && r.Upstream != ""
		switch {
		case !r.listed && r.Upstream != "":
			r.Upstreams = []Deployment{{Name: r.Upstream}}
		case r.listed:
			r.Upstream = r.Upstreams[0].Name
		}
		for k := range r.Upstreams {
			if r.Upstreams[k].Weight == nil {
				one := 1
				r.Upstreams[k].Weight = &one
			}
		}
		if r.ToolCalls == "" {
			r.ToolCalls = "stream"
		}
		if r.Reasoning.Output == "" {
			r.Reasoning.Output = "reasoning_content"
		}
		if r.Reasoning.OnMiss == "" {
			r.Reasoning.OnMiss = "send"
		}
		if r.Reasoning.ForcedToolChoice == "" {
			r.Reasoning.ForcedToolChoice = "auto"
		}
		if r.Budget != nil && r.Budget.OnInputOver == "" {
			r.Budget.OnInputOver = "refuse"
		}
		for _, b := range []**bool{&r.Normalize.ArgumentsToString, &r.Normalize.SynthesizeIDs, &r.Normalize.DedupeCallIDs} {
			if *b == nil {
				on := true
				*b = &on
			}
		}
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Validate checks the whole tree and returns one error listing every
// problem, each prefixed with its field path, or nil. It changes nothing.
func (c *Config) Validate() error {
	var errs []string
	add := func(path, format string, args ...any) {
		errs = append(errs, path+": "+fmt.Sprintf(format, args...))
	}
	if *c.Log.FlushInterval < 0 {
		add("log.flush_interval", "must be 0s (unbuffered) or a positive duration, got %s", *c.Log.FlushInterval)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	for _, f := range []struct {
		path string
		d    time.Duration
	}{
		{"server.read_header_timeout", c.Server.ReadHeaderTimeout},
		{"server.idle_timeout", c.Server.IdleTimeout},
		{"server.drain_timeout", c.Server.DrainTimeout},
		{"server.write_idle_timeout", c.Server.WriteIdleTimeout},
		{"server.read_body_timeout", c.Server.ReadBodyTimeout},
	} {
		if f.d < 0 {
			add(f.path, "must be a positive duration such as 30s, got %s", f.d)
		}
	}
	validatePricing(c.Pricing, add)
	switch c.Telemetry.Protocol {
	case "", "grpc", "http/protobuf":
	default:
		add("telemetry.protocol", "must be grpc or http/protobuf, got %q", c.Telemetry.Protocol)
	}
	if e := c.Telemetry.OTLPEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("telemetry.otlp_endpoint", "must be an http:// or https:// URL such as http://otel-collector:4317")
		}
	}
	keyNames := map[string]bool{}
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Name == "" {
			add(p+".name", "is required")
		} else if keyNames[k.Name] {
			add(p+".name", "%q is used by another key", k.Name)
		}
		keyNames[k.Name] = true
		if len(k.SHA256) != 64 || strings.Trim(strings.ToLower(k.SHA256), "0123456789abcdef") != "" {
			add(p+".sha256", "must be the 64 hex digits of the key's SHA-256 (never the key itself)")
		}
		validateBudget(p+".budget", k.Budget, false, add)
		if k.Budget != nil && k.Budget.MaxCostUSD > 0 && len(c.Pricing) == 0 {
			add(p+".budget.max_cost_usd", "needs prices to count spend: no model is priced (pricing)")
		}
		if k.RateLimit.RequestsPerMinute < 0 || k.RateLimit.TokensPerMinute < 0 {
			add(p+".rate_limit", "values must be positive (0 is no limit)")
		}
	}
	switch c.State.Store {
	case "memory":
	case "redis":
		if c.State.RedisURL == "" {
			add("state.redis_url", "is required with store: redis (redis://host:6379/0)")
		} else {
			for _, s := range strings.Split(c.State.RedisURL, ",") {
				if u, err := url.Parse(strings.TrimSpace(s)); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
					add("state.redis_url", "must be a redis:// or rediss:// URL, or several, comma-separated (a cluster's seeds)")
					break
				}
			}
		}
	default:
		add("state.store", "must be memory or redis, got %q", c.State.Store)
	}
	switch c.Responses.Store {
	case "none", "memory":
	case "redis":
		if c.State.Store != "redis" {
			add("responses.store", "redis keeps responses in the state store's Redis: set state.store: redis (and state.redis_url)")
		}
	default:
		add("responses.store", "must be none, memory or redis, got %q", c.Responses.Store)
	}
	if c.Responses.MaxBytes < 0 || c.Responses.MaxBytesPerKey < 0 || c.Responses.MaxBytesPerKey > c.Responses.MaxBytes {
		add("responses.max_bytes_per_key", "max_bytes and max_bytes_per_key must be positive, max_bytes_per_key at most max_bytes (%d), got %d", c.Responses.MaxBytes, c.Responses.MaxBytesPerKey)
	}
	if c.Responses.TTL < 0 {
		add("responses.ttl", "must be a positive duration such as 24h, got %s", c.Responses.TTL)
	}
	if c.State.Timeout < 0 {
		add("state.timeout", "must be a positive duration such as 250ms, got %s", c.State.Timeout)
	}
	if c.State.OnError != "fail_open" && c.State.OnError != "fail_closed" {
		add("state.on_error", "must be fail_open or fail_closed, got %q", c.State.OnError)
	}
	if c.Sessions.Window < 0 {
		add("sessions.window", "must be a positive duration such as 1h, got %s", c.Sessions.Window)
	}
	if c.Server.MaxBodyBytes < 0 {
		add("server.max_body_bytes", "must be positive, got %d", c.Server.MaxBodyBytes)
	}
	if c.Server.MaxMessages < 0 || c.Server.MaxTools < 0 {
		add("server", "max_messages and max_tools must be positive")
	}
	if c.Server.MaxPendingKeyless < 0 || c.Server.MaxPendingKeyless > c.Server.MaxPendingRequests {
		add("server.max_pending_keyless", "must be positive and at most max_pending_requests (%d), got %d", c.Server.MaxPendingRequests, c.Server.MaxPendingKeyless)
	}
	if c.Server.PendingIPv4Prefix < 0 || c.Server.PendingIPv4Prefix > 32 || c.Server.PendingIPv6Prefix < 0 || c.Server.PendingIPv6Prefix > 128 {
		add("server.pending_ipv4_prefix", "pending_ipv4_prefix must be 1 to 32 and pending_ipv6_prefix 1 to 128, got %d and %d", c.Server.PendingIPv4Prefix, c.Server.PendingIPv6Prefix)
	}
	if c.Server.MaxPendingRequests < 0 || c.Server.MaxPendingPerIP < 0 {
		add("server", "max_pending_requests and max_pending_per_ip must be positive")
	}
	if len(c.Upstreams) == 0 {
		add("upstreams", "at least one upstream is required")
	}
	names := map[string]bool{}
	for i, u := range c.Upstreams {
		p := fmt.Sprintf("upstreams[%d]", i)
		switch {
		case u.Name == "":
			add(p+".name", "is required")
		case names[u.Name]:
			add(p+".name", "%q is used by another upstream; names must be unique", u.Name)
		}
		names[u.Name] = true
		switch {
		case u.Simulator && u.URL != "":
			add(p+".url", "must be empty when simulator is true (the gateway starts the simulator itself)")
		case !u.Simulator && u.URL == "":
			add(p+".url", "is required (the API base URL, e.g. https://api.openai.com/v1)")
		case !u.Simulator:
			pu, err := url.Parse(u.URL)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				add(p+".url", "must be an absolute http or https URL, got %q", u.URL)
			}
		}
		switch u.Protocol {
		case "openai", "anthropic":
		default:
			add(p+".protocol", "must be openai or anthropic, got %q", u.Protocol)
		}
		if u.DefaultMaxTokens < 0 {
			add(p+".default_max_tokens", "must be positive, got %d", u.DefaultMaxTokens)
		}
		if strings.ContainsAny(u.AuthHeader, " :\r\n") {
			add(p+".auth_header", "must be a header name, got %q", u.AuthHeader)
		}
		for _, f := range []struct {
			name string
			d    time.Duration
		}{{"connect_timeout", u.ConnectTimeout}, {"header_timeout", u.HeaderTimeout}, {"read_idle_timeout", u.ReadIdleTimeout}} {
			if f.d < 0 {
				add(p+"."+f.name, "must be a positive duration, got %s", f.d)
			}
		}
		if u.MaxErrorBodyBytes < 0 || u.MaxResponseBytes < 0 || u.MaxEventBytes < 0 {
			add(p, "size limits must be positive")
		}
		switch u.ToolCallContent {
		case "keep", "null", "empty":
		default:
			add(p+".tool_call_content", "must be keep, null or empty, got %q", u.ToolCallContent)
		}
		if u.MaxToolCallIDLen != 0 && u.MaxToolCallIDLen < 8 {
			add(p+".max_tool_call_id_len", "must be 0 (no limit) or at least 8, got %d", u.MaxToolCallIDLen)
		}
		if u.OutputLimitField != "max_tokens" && u.OutputLimitField != "max_completion_tokens" {
			add(p+".output_limit_field", "must be max_tokens or max_completion_tokens, got %q", u.OutputLimitField)
		}
		switch u.ReasoningField {
		case "reasoning_content", "reasoning", "think":
		default:
			add(p+".reasoning_field", "must be reasoning_content, reasoning or think, got %q", u.ReasoningField)
		}
		for _, q := range u.Quirks {
			switch {
			case (q == "all" || q == "strict") && len(u.Quirks) > 1:
				add(p+".quirks", "%q must stand alone, not in a list", q)
			case q == "all" || q == "strict" || slices.Contains(quirkNames, q):
			default:
				add(p+".quirks", "unknown quirk %q; use all, strict, or a list of: %s", q, strings.Join(quirkNames, ", "))
			}
		}
	}
	if len(c.Routes) == 0 {
		add("routes", "at least one route is required (use model: \"*\" to route every model)")
	}
	models := map[string]bool{}
	routeNames := map[string]bool{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if r.Model == "" {
			add(p+".model", "is required (a model name, or a pattern such as \"gpt-*\")")
		} else if models[r.Model] {
			add(p+".model", "%q is routed twice; the second route would never be used", r.Model)
		}
		models[r.Model] = true
		if r.Name != "" && routeNames[r.Name] {
			add(p+".name", "%q is used by another route; names must be unique", r.Name)
		}
		routeNames[r.Name] = true
		validateDeployments(p, &r, names, add)
		if strings.Contains(r.UpstreamModel, "*") {
			add(p+".upstream_model", "must be a model name, not a pattern")
		}
		switch r.Repair {
		case "fix", "reject", "off":
		default:
			add(p+".repair", "must be fix, reject or off, got %q", r.Repair)
		}
		switch r.Policy {
		case "session", "default", "off":
		default:
			add(p+".policy", "must be session, default or off, got %q", r.Policy)
		}
		validateReasoning(p+".reasoning", &r.Reasoning, add)
		validateBudget(p+".budget", r.Budget, true, add)
		if r.Retries < 0 || r.Retries > 5 {
			add(p+".retries", "must be between 0 and 5, got %d", r.Retries)
		}
		for k, f := range r.Fallbacks {
			if f == r.Name {
				add(fmt.Sprintf("%s.fallbacks[%d]", p, k), "is the route itself")
			} else if _, ok := c.Route(f); !ok {
				add(fmt.Sprintf("%s.fallbacks[%d]", p, k), "%q is not the name of any route", f)
			}
		}
		if r.RetryBackoff < 0 || r.RetryMaxWait < 0 {
			add(p+".retry_backoff", "retry_backoff and retry_max_wait must be positive durations")
		}
		validatePathRules(p+".passthrough", r.Passthrough.Paths, add)
		validatePathRules(p+".paths", r.Paths, add)
		if r.ToolCalls != "stream" && r.ToolCalls != "buffer" {
			add(p+".tool_calls", "must be stream or buffer, got %q", r.ToolCalls)
		}
		switch r.ValidateArguments {
		case "off", "annotate", "reject":
		default:
			add(p+".validate_arguments", "must be off, annotate or reject, got %q", r.ValidateArguments)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &Error{Problems: errs}
}

// Error is an invalid configuration: every problem found, each naming its
// field path.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

func (c *Config) resolve() {
	c.pricePatterns = nil
	for _, name := range slices.Sorted(maps.Keys(c.Pricing)) {
		if strings.Contains(name, "*") {
			c.pricePatterns = append(c.pricePatterns, name)
		}
	}
	slices.SortStableFunc(c.pricePatterns, func(a, b string) int { return len(b) - len(a) })
	c.exact = map[string]*Route{}
	c.patterns = nil
	c.byName = map[string]*Upstream{}
	for i := range c.Upstreams {
		c.byName[c.Upstreams[i].Name] = &c.Upstreams[i]
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.IsPattern() {
			c.patterns = append(c.patterns, r)
		} else {
			c.exact[r.Model] = r
		}
	}
}

// validateBudget checks a budget block (nil is none); on_input_over only
// means something on a route.
// validatePathRules checks a route's passthrough or paths list.
func validatePathRules(p string, rules []PathRule, add func(path, format string, args ...any)) {
	for k, r := range rules {
		if !strings.HasPrefix(r.Path, "/v1/") {
			add(fmt.Sprintf("%s[%d]", p, k), "must be a /v1/ path (* matches any run of characters), got %q", r.Path)
		}
		for _, m := range r.Methods {
			if !slices.Contains(forwardableMethods, m) {
				add(fmt.Sprintf("%s[%d].methods", p, k), "%q is not a method the gateway forwards (%s)", m, strings.Join(forwardableMethods, ", "))
			}
		}
	}
}

// forwardableMethods are the methods a path rule may allow: TRACE and
// CONNECT never are.
var forwardableMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

func validateBudget(p string, b *Budget, route bool, add func(path, format string, args ...any)) {
	if b == nil {
		return
	}
	switch b.Preset {
	case "", "small", "medium", "large":
	default:
		add(p+".preset", "must be small, medium or large, got %q", b.Preset)
	}
	if route && b.OnInputOver != "refuse" && b.OnInputOver != "trim" {
		add(p+".on_input_over", "must be refuse or trim, got %q", b.OnInputOver)
	}
	switch {
	case route && (b.MaxCostUSD != 0 || b.CostWindow != ""):
		add(p+".max_cost_usd", "spend is limited per key: set it in keys[].budget")
	case b.MaxCostUSD < 0:
		add(p+".max_cost_usd", "must be positive (0 is no limit), got %v", b.MaxCostUSD)
	case b.CostWindow != "" && b.CostWindow != "day" && b.CostWindow != "month":
		add(p+".cost_window", "must be day or month, got %q", b.CostWindow)
	}
}

// validateDeployments checks a route's upstream or deployments.
func validateDeployments(p string, r *Route, names map[string]bool, add func(path, format string, args ...any)) {
	switch {
	case r.both:
		add(p+".upstreams", "set upstream or upstreams, not both")
		return
	case r.Upstream == "":
		add(p+".upstream", "is required (or upstreams: several deployments)")
		return
	case !r.listed && !names[r.Upstream]:
		add(p+".upstream", "%q is not the name of any entry in upstreams", r.Upstream)
		return
	}
	seen, total := map[string]bool{}, 0
	for k, d := range r.Upstreams {
		q := fmt.Sprintf("%s.upstreams[%d]", p, k)
		switch {
		case !names[d.Name]:
			add(q+".name", "%q is not the name of any entry in upstreams", d.Name)
		case seen[d.Name]:
			add(q+".name", "%q is listed twice", d.Name)
		}
		seen[d.Name] = true
		if *d.Weight < 0 || *d.Weight > 1000000 {
			add(q+".weight", "must be between 0 and 1000000, got %d", *d.Weight)
		}
		total += max(*d.Weight, 0)
	}
	if total == 0 {
		add(p+".upstreams", "at least one deployment needs a positive weight")
	}
	if r.Cooldown < 0 {
		add(p+".cooldown", "must be a positive duration such as 30s, got %s", r.Cooldown)
	}
}

// validatePricing checks the prices: non-negative numbers.
func validatePricing(prices map[string]Price, add func(path, format string, args ...any)) {
	for _, name := range slices.Sorted(maps.Keys(prices)) {
		pr := prices[name]
		if name == "" {
			add("pricing", "a model name is empty")
		}
		if pr.Input < 0 || pr.Output < 0 || pr.CachedInput != nil && *pr.CachedInput < 0 {
			add(fmt.Sprintf("pricing[%q]", name), "prices must be positive dollars per million tokens")
		}
	}
}

// PriceOf returns the price of an upstream model name and the pricing
// entry that gave it (the name, or the pattern: a configured string, fit
// for a metric label). An exact name wins; then patterns, the longest
// first (the most specific), then in name order.
func (c *Config) PriceOf(model string) (Price, string, bool) {
	if pr, ok := c.Pricing[model]; ok && !strings.Contains(model, "*") {
		return pr, model, true
	}
	for _, name := range c.pricePatterns {
		if GlobMatch(name, model) {
			return c.Pricing[name], name, true
		}
	}
	return Price{}, "", false
}

func validateReasoning(p string, r *Reasoning, add func(path, format string, args ...any)) {
	levels := []string{"off", "low", "medium", "high"}
	switch r.Format {
	case "", "reasoning-effort", "thinking", "enable-thinking", "thinking-budget", "custom":
	default:
		add(p+".format", "must be reasoning-effort, thinking, enable-thinking, thinking-budget or custom, got %q", r.Format)
	}
	if r.ForcedToolChoice != "" && r.ForcedToolChoice != "auto" && r.ForcedToolChoice != "disable_thinking" {
		add(p+".forced_tool_choice", "must be auto or disable_thinking, got %q", r.ForcedToolChoice)
	}
	if r.OnMiss != "" && r.OnMiss != "send" && r.OnMiss != "disable_thinking" {
		add(p+".on_miss", "must be send or disable_thinking, got %q", r.OnMiss)
	}
	if r.OnMiss == "disable_thinking" && r.Format == "" {
		add(p+".on_miss", "disable_thinking needs a reasoning format to say off in")
	}
	if r.Output != "" && r.Output != "reasoning_content" && r.Output != "reasoning" {
		add(p+".output", "must be reasoning_content or reasoning, got %q", r.Output)
	}
	if r.Level != "" && !slices.Contains(levels, r.Level) {
		add(p+".level", "must be off, low, medium or high, got %q", r.Level)
	}
	if r.Format == "" && (r.Level != "" || r.ClientEffort || len(r.Fields) > 0) {
		add(p+".format", "is required when reasoning is configured")
	}
	for level, n := range r.Budgets {
		if !slices.Contains(levels[1:], level) {
			add(p+".budgets."+level, "is not a level; use low, medium or high")
		} else if n < 1 {
			add(p+".budgets."+level, "must be a positive number of tokens, got %d", n)
		}
	}
	if len(r.Custom) > 0 && r.Format != "custom" {
		add(p+".custom", "is only used with format: custom")
	}
	for level, fields := range r.Custom {
		if !slices.Contains(levels, level) {
			add(p+".custom."+level, "is not a level; use off, low, medium or high")
		}
		for k := range fields {
			if slices.Contains(reasoningProtected, k) {
				add(p+".custom."+level+"."+k, "may not be set by reasoning configuration: model, messages, stream and the output limit are the gateway's")
			}
		}
	}
	for k := range r.Fields {
		if slices.Contains(reasoningProtected, k) {
			add(p+".fields."+k, "may not be set by reasoning configuration: model, messages, stream and the output limit are the gateway's")
		}
	}
}

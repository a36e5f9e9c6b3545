package config

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// reasoningProtected are the request fields reasoning may never set.
var reasoningProtected = []string{"model", "messages", "stream", "max_tokens", "max_completion_tokens"}

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

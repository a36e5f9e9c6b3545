package config

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// Error is an invalid configuration: every problem found, each naming its
// field path.
type Error struct {
	Problems []string
}

func (e *Error) Error() string {
	return "invalid configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// check parses every setting into its typed value (each by the package
// that owns it) and validates the whole tree, returning one *Error that
// lists every problem with its field path, or nil. It runs once, at load,
// after applyDefaults.
func (c *Config) check() error {
	var p problems
	c.checkTop(&p)
	c.checkState(&p)
	c.checkServer(&p)
	keys := map[string]bool{}
	for i := range c.Keys {
		c.Keys[i].check(&p, fmt.Sprintf("keys[%d]", i), keys, len(c.Pricing) > 0)
	}
	if len(c.Upstreams) == 0 {
		p.add("upstreams", "at least one upstream is required")
	}
	upstreams := map[string]bool{}
	for i := range c.Upstreams {
		c.Upstreams[i].check(&p, fmt.Sprintf("upstreams[%d]", i), upstreams)
	}
	if len(c.Routes) == 0 {
		p.add("routes", "at least one route is required (use model: \"*\" to route every model)")
	}
	models, routes := map[string]bool{}, map[string]bool{}
	for i := range c.Routes {
		r := &c.Routes[i]
		path := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Model == "":
			p.add(path+".model", "is required (a model name, or a pattern such as \"gpt-*\")")
		case models[r.Model]:
			p.add(path+".model", "%q is routed twice; the second route would never be used", r.Model)
		}
		models[r.Model] = true
		if r.Name != "" && routes[r.Name] {
			p.add(path+".name", "%q is used by another route; names must be unique", r.Name)
		}
		routes[r.Name] = true
		r.check(&p, path, upstreams)
		c.checkFallbacks(&p, path, r)
	}
	if len(p) == 0 {
		c.checkThinkingBudgets(&p)
	}
	if len(p) == 0 {
		return nil
	}
	return &Error{Problems: p}
}

// checkTop checks the log, telemetry and pricing blocks.
func (c *Config) checkTop(p *problems) {
	for _, l := range []struct{ path, addr string }{{"listen", c.Listen}, {"admin_listen", c.AdminListen}} {
		if _, port, err := net.SplitHostPort(l.addr); err != nil || port == "" {
			p.add(l.path, "must be host:port, such as 127.0.0.1:8080 or :8080 (every interface), got %q", l.addr)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			p.add(l.path, "must end with a port number (0 to 65535), got %q", l.addr)
		}
	}
	c.Log.Level.parse(p, "log.level")
	if *c.Log.FlushInterval < 0 {
		p.add("log.flush_interval", "must be 0s (unbuffered) or a positive duration, got %s", *c.Log.FlushInterval)
	}
	c.Telemetry.Protocol.parse(p, "telemetry.protocol")
	if e := c.Telemetry.OTLPEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add("telemetry.otlp_endpoint", "must be an http:// or https:// URL such as http://otel-collector:4317")
		}
	}
	if i := c.Console.Inspect; i != "" && i != "outline" && i != "content" {
		p.add("console.inspect", "must be outline or content, got %q", i)
	}
	if r := c.Console.Recent; r != nil && (*r < 0 || *r > MaxConsoleRecent) {
		p.add("console.recent", "must be 0 (keep none) to %d requests, got %d", MaxConsoleRecent, *r)
	}
	if c.Sessions.Window < 0 {
		p.add("sessions.window", "must be a positive duration such as 1h, got %s", c.Sessions.Window)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Pricing)) {
		pr := c.Pricing[name]
		if name == "" {
			p.add("pricing", "a model name is empty")
		}
		if pr.Input < 0 || pr.Output < 0 || pr.CachedInput != nil && *pr.CachedInput < 0 {
			p.add(fmt.Sprintf("pricing[%q]", name), "prices must be positive dollars per million tokens")
		}
	}
}

// checkState checks where state lives: the counters' store and the
// stored responses'.
func (c *Config) checkState(p *problems) {
	s := &c.State
	s.Store.parse(p, "state.store")
	s.OnError.parse(p, "state.on_error")
	switch s.Store.Value {
	case state.None:
		p.add("state.store", "must be memory or redis, got %q", s.Store.Name)
	case state.Redis:
		checkRedisURL(p, s.RedisURL)
	}
	if s.Timeout < 0 {
		p.add("state.timeout", "must be a positive duration such as 250ms, got %s", s.Timeout)
	}
	r := &c.Responses
	r.Store.parse(p, "responses.store")
	if r.Store.Value == state.Redis && s.Store.Value != state.Redis {
		p.add("responses.store", "redis keeps responses in the state store's Redis: set state.store: redis (and state.redis_url)")
	}
	if c.Server.MemoryLimit != 0 && c.Server.MemoryLimit < 64<<20 {
		p.add("server.memory_limit", "must be at least 64 MiB (67108864), got %d", c.Server.MemoryLimit)
	}
	if r.MaxBytes < 0 || r.MaxBytesPerKey < 0 || r.MaxBytesPerKey > r.MaxBytes {
		p.add("responses.max_bytes_per_key", "max_bytes and max_bytes_per_key must be positive, max_bytes_per_key at most max_bytes (%d), got %d", r.MaxBytes, r.MaxBytesPerKey)
	}
	if r.TTL < 0 {
		p.add("responses.ttl", "must be a positive duration such as 24h, got %s", r.TTL)
	}
	if r.SealKey != "" && len(r.SealKey) < 16 {
		p.add("responses.seal_key", "must be at least 16 characters (a secret every replica shares), got %d", len(r.SealKey))
	}
}

func checkRedisURL(p *problems, urls string) {
	if urls == "" {
		p.add("state.redis_url", "is required with store: redis (redis://host:6379/0)")
		return
	}
	for _, s := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			p.add("state.redis_url", "must be a redis:// or rediss:// URL, or several, comma-separated (a cluster's seeds)")
			return
		}
	}
}

// checkServer checks the listeners' limits and timeouts.
func (c *Config) checkServer(p *problems) {
	s := &c.Server
	for _, f := range []struct {
		path string
		d    time.Duration
	}{
		{"server.read_header_timeout", s.ReadHeaderTimeout}, {"server.idle_timeout", s.IdleTimeout},
		{"server.drain_timeout", s.DrainTimeout}, {"server.write_idle_timeout", s.WriteIdleTimeout},
		{"server.read_body_timeout", s.ReadBodyTimeout},
	} {
		if f.d < 0 {
			p.add(f.path, "must be a positive duration such as 30s, got %s", f.d)
		}
	}
	if s.MaxBodyBytes < 0 {
		p.add("server.max_body_bytes", "must be positive, got %d", s.MaxBodyBytes)
	}
	if s.MaxMessages < 0 || s.MaxTools < 0 {
		p.add("server", "max_messages and max_tools must be positive")
	}
	if s.MaxPendingRequests < 0 || s.MaxPendingPerIP < 0 {
		p.add("server", "max_pending_requests and max_pending_per_ip must be positive")
	}
	if s.MaxPendingKeyless < 0 || s.MaxPendingKeyless > s.MaxPendingRequests {
		p.add("server.max_pending_keyless", "must be positive and at most max_pending_requests (%d), got %d", s.MaxPendingRequests, s.MaxPendingKeyless)
	}
	if s.PendingIPv4Prefix < 0 || s.PendingIPv4Prefix > 32 || s.PendingIPv6Prefix < 0 || s.PendingIPv6Prefix > 128 {
		p.add("server.pending_ipv4_prefix", "pending_ipv4_prefix must be 1 to 32 and pending_ipv6_prefix 1 to 128, got %d and %d", s.PendingIPv4Prefix, s.PendingIPv6Prefix)
	}
}

// check checks a client key (names: those of the keys before it).
func (k *Key) check(p *problems, path string, names map[string]bool, priced bool) {
	switch {
	case k.Name == "":
		p.add(path+".name", "is required")
	case names[k.Name]:
		p.add(path+".name", "%q is used by another key", k.Name)
	}
	names[k.Name] = true
	if len(k.SHA256) != 64 || strings.Trim(strings.ToLower(k.SHA256), "0123456789abcdef") != "" {
		p.add(path+".sha256", "must be the 64 hex digits of the key's SHA-256 (never the key itself)")
	}
	k.Budget.check(p, path+".budget", false)
	if k.Budget != nil && k.Budget.MaxCostUSD > 0 && !priced {
		p.add(path+".budget.max_cost_usd", "needs prices to count spend: no model is priced (pricing)")
	}
	if k.RateLimit.RequestsPerMinute < 0 || k.RateLimit.TokensPerMinute < 0 {
		p.add(path+".rate_limit", "values must be positive (0 is no limit)")
	}
	checkOrgWide(p, path+".org_wide", k.OrgWide)
}

// checkOrgWide checks an org_wide list: each one of translate.OrgWideKinds.
func checkOrgWide(p *problems, path string, kinds []string) {
	for i, k := range kinds {
		if !slices.Contains(translate.OrgWideKinds, k) {
			p.add(fmt.Sprintf("%s[%d]", path, i), "%q is not a kind of organization-wide object; use one of %s", k, strings.Join(translate.OrgWideKinds, ", "))
		}
	}
}

// check checks an upstream (names: those of the upstreams before it).
func (u *Upstream) check(p *problems, path string, names map[string]bool) {
	switch {
	case u.Name == "":
		p.add(path+".name", "is required")
	case names[u.Name]:
		p.add(path+".name", "%q is used by another upstream; names must be unique", u.Name)
	}
	names[u.Name] = true
	u.Protocol.parse(p, path+".protocol")
	u.Auth.parse(p, path+".auth")
	if u.Auth.Value != upstream.AuthKey && u.APIKey != "" {
		p.add(path+".api_key", "is not sent with auth: %s (its credentials give the token); leave it out", u.Auth.Name)
	}
	u.checkURL(p, path)
	u.ToolCallContent.parse(p, path+".tool_call_content")
	u.OutputLimitField.parse(p, path+".output_limit_field")
	u.ReasoningField.parse(p, path+".reasoning_field")
	if u.DefaultMaxTokens < 0 {
		p.add(path+".default_max_tokens", "must be positive, got %d", u.DefaultMaxTokens)
	}
	if strings.ContainsAny(u.AuthHeader, " :\r\n") {
		p.add(path+".auth_header", "must be a header name, got %q", u.AuthHeader)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"connect_timeout", u.ConnectTimeout}, {"header_timeout", u.HeaderTimeout}, {"read_idle_timeout", u.ReadIdleTimeout}} {
		if f.d < 0 {
			p.add(path+"."+f.name, "must be a positive duration, got %s", f.d)
		}
	}
	if u.MaxErrorBodyBytes < 0 || u.MaxResponseBytes < 0 || u.MaxEventBytes < 0 {
		p.add(path, "size limits must be positive")
	}
	if u.MaxToolCallIDLen != 0 && u.MaxToolCallIDLen < 8 {
		p.add(path+".max_tool_call_id_len", "must be 0 (no limit) or at least 8, got %d", u.MaxToolCallIDLen)
	}
	q, err := wire.ParseQuirks([]string(u.Quirks))
	if err != nil {
		p.add(path+".quirks", "%v", err)
	}
	u.Normalizations = q
}

// checkURL checks an upstream's base URL, and that it names the version
// its protocol's paths hang from: the gateway appends the endpoint
// (/chat/completions, /messages) to it, and a base without its version
// answers 404 to every request.
func (u *Upstream) checkURL(p *problems, path string) {
	switch {
	case u.Simulator && u.URL != "":
		p.add(path+".url", "must be empty when simulator is true (the gateway starts the simulator itself)")
		return
	case u.Simulator:
		return
	case u.URL == "":
		p.add(path+".url", "is required (the API base URL, e.g. https://api.openai.com/v1)")
		return
	}
	pu, err := url.Parse(u.URL)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		p.add(path+".url", "must be an absolute http or https URL, got %q", u.URL)
		return
	}
	u.checkPlaceholder(p, path, pu)
	if u.APIVersion != "" && strings.Trim(u.APIVersion, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "" {
		p.add(path+".api_version", "must be a version such as 2024-10-21, got %q", u.APIVersion)
	}
	last := pu.Path[strings.LastIndex(strings.TrimSuffix(pu.Path, "/"), "/")+1:]
	last = strings.TrimSuffix(last, "/")
	switch {
	case u.Protocol.Value == translate.Anthropic && last == "anthropic" && strings.HasSuffix(pu.Path, "/publishers/anthropic"),
		u.Protocol.Value == translate.Gemini && last == "google" && strings.HasSuffix(pu.Path, "/publishers/google"):
		// Vertex AI: a publisher's models, below a project and location.
	case u.Protocol.Value == translate.Anthropic && last != "v1":
		p.add(path+".url", "must end with the API version, as in https://api.anthropic.com/v1 (the gateway appends /messages to it), got %q", u.URL)
	case u.Protocol.Value == translate.Responses && last != "v1":
		p.add(path+".url", "must end with the API version, as in https://api.openai.com/v1 (the gateway appends /responses to it), got %q", u.URL)
	case u.Protocol.Value == translate.Bedrock && strings.Trim(pu.Path, "/") != "":
		p.add(path+".url", "must be the runtime's endpoint without a path, as in https://bedrock-runtime.us-east-1.amazonaws.com (the gateway appends /model/{model}/converse to it), got %q", u.URL)
	case u.Protocol.Value == translate.Gemini && last != "v1beta" && last != "v1" && last != "v1alpha":
		p.add(path+".url", "must end with the API version, as in https://generativelanguage.googleapis.com/v1beta (the gateway appends /models/{model}:generateContent to it), got %q", u.URL)
	}
}

// Vertex reports an upstream that is a publisher's models on Google
// Vertex AI (its URL's path ends with /publishers/anthropic or
// /publishers/google): their endpoints name the model, and an Anthropic
// model takes its version in the body.
func (u *Upstream) Vertex() bool {
	pu, err := url.Parse(u.URL)
	return err == nil && (strings.HasSuffix(strings.TrimSuffix(pu.Path, "/"), "/publishers/anthropic") ||
		strings.HasSuffix(strings.TrimSuffix(pu.Path, "/"), "/publishers/google"))
}

// checkPlaceholder checks where an upstream's URL names the model: at
// most once, as a whole segment of its path.
func (u *Upstream) checkPlaceholder(p *problems, path string, pu *url.URL) {
	const model = "{model}"
	n := strings.Count(u.URL, model)
	switch {
	case n == 0 && !strings.ContainsAny(u.URL, "{}"):
	case n > 1, strings.Contains(pu.Host, "{") || pu.RawQuery != "", strings.Count(u.URL, "{") != n:
		p.add(path+".url", "may name the model once, as a segment of its path ({model}), got %q", u.URL)
	case !strings.Contains("/"+strings.Trim(pu.Path, "/")+"/", "/"+model+"/"):
		p.add(path+".url", "must hold {model} as a whole segment of its path, as in https://R.openai.azure.com/openai/deployments/{model}, got %q", u.URL)
	}
}

// check checks a route's settings (upstreams: the upstreams' names).
func (r *Route) check(p *problems, path string, upstreams map[string]bool) {
	r.checkDeployments(p, path, upstreams)
	checkOrgWide(p, path+".org_wide", r.OrgWide)
	if strings.Contains(r.UpstreamModel, "*") {
		p.add(path+".upstream_model", "must be a model name, not a pattern")
	}
	if r.UpstreamPrevious && !r.UpstreamStore {
		p.add(path+".upstream_previous", "needs upstream_store: true (the upstream must keep the responses it is to continue)")
	}
	r.Repair.parse(p, path+".repair")
	r.Policy.parse(p, path+".policy")
	r.ValidateArguments.parse(p, path+".validate_arguments")
	r.ToolCalls.parse(p, path+".tool_calls")
	r.Reasoning.check(p, path+".reasoning")
	r.Budget.check(p, path+".budget", true)
	if r.Retries < 0 || r.Retries > 5 {
		p.add(path+".retries", "must be between 0 and 5, got %d", r.Retries)
	}
	if r.RetryBackoff < 0 || r.RetryMaxWait < 0 {
		p.add(path+".retry_backoff", "retry_backoff and retry_max_wait must be positive durations")
	}
	checkPathRules(p, path+".passthrough", r.Passthrough.Paths)
	checkPathRules(p, path+".paths", r.Paths)
}

// checkFallbacks checks that a route's fallbacks name other routes.
func (c *Config) checkFallbacks(p *problems, path string, r *Route) {
	for k, f := range r.Fallbacks {
		if f == r.Name {
			p.add(fmt.Sprintf("%s.fallbacks[%d]", path, k), "is the route itself")
		} else if _, ok := c.Route(f); !ok {
			p.add(fmt.Sprintf("%s.fallbacks[%d]", path, k), "%q is not the name of any route", f)
		}
	}
}

// checkDeployments checks a route's upstream or deployments.
func (r *Route) checkDeployments(p *problems, path string, names map[string]bool) {
	switch {
	case r.both:
		p.add(path+".upstreams", "set upstream or upstreams, not both")
		return
	case r.Upstream == "":
		p.add(path+".upstream", "is required (or upstreams: several deployments)")
		return
	case !r.listed && !names[r.Upstream]:
		p.add(path+".upstream", "%q is not the name of any entry in upstreams", r.Upstream)
		return
	}
	seen, total := map[string]bool{}, 0
	for k, d := range r.Upstreams {
		q := fmt.Sprintf("%s.upstreams[%d]", path, k)
		switch {
		case !names[d.Name]:
			p.add(q+".name", "%q is not the name of any entry in upstreams", d.Name)
		case seen[d.Name]:
			p.add(q+".name", "%q is listed twice", d.Name)
		}
		seen[d.Name] = true
		if *d.Weight < 0 || *d.Weight > 1000000 {
			p.add(q+".weight", "must be between 0 and 1000000, got %d", *d.Weight)
		}
		total += max(*d.Weight, 0)
	}
	if total == 0 {
		p.add(path+".upstreams", "at least one deployment needs a positive weight")
	}
	if r.Cooldown < 0 {
		p.add(path+".cooldown", "must be a positive duration such as 30s, got %s", r.Cooldown)
	}
}

// forwardableMethods are the methods a path rule may allow: TRACE and
// CONNECT never are.
var forwardableMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// checkPathRules checks a route's passthrough or paths list.
func checkPathRules(p *problems, path string, rules []PathRule) {
	for k, r := range rules {
		if !strings.HasPrefix(r.Path, "/v1/") {
			p.add(fmt.Sprintf("%s[%d]", path, k), "must be a /v1/ path (* matches any run of characters), got %q", r.Path)
		}
		for _, m := range r.Methods {
			if !slices.Contains(forwardableMethods, m) {
				p.add(fmt.Sprintf("%s[%d].methods", path, k), "%q is not a method the gateway forwards (%s)", m, strings.Join(forwardableMethods, ", "))
			}
		}
	}
}

// check checks a budget block (nil: none); on_input_over only means
// something on a route, spend only on a key.
func (b *Budget) check(p *problems, path string, route bool) {
	if b == nil {
		return
	}
	b.Preset.parse(p, path+".preset")
	b.OnInputOver.parse(p, path+".on_input_over")
	b.CostWindow.parse(p, path+".cost_window")
	switch {
	case route && (b.MaxCostUSD != 0 || b.CostWindow.Name != "day"):
		p.add(path+".max_cost_usd", "spend is limited per key: set it in keys[].budget")
	case b.MaxCostUSD < 0:
		p.add(path+".max_cost_usd", "must be positive (0 is no limit), got %v", b.MaxCostUSD)
	}
}

// reasoningProtected are the request fields reasoning may never set.
var reasoningProtected = []string{"model", "messages", "stream", "max_tokens", "max_completion_tokens"}

// check checks a route's reasoning block, parsing its levels.
func (r *Reasoning) check(p *problems, path string) {
	r.Format.parse(p, path+".format")
	r.Level.parse(p, path+".level")
	r.Output.parse(p, path+".output")
	r.OnMiss.parse(p, path+".on_miss")
	r.ForcedToolChoice.parse(p, path+".forced_tool_choice")
	none := r.Format.Value == policy.FormatNone
	if r.OnMiss.Value == policy.MissDisableThinking && none {
		p.add(path+".on_miss", "disable_thinking needs a reasoning format to say off in")
	}
	if none && (r.Level.Value != policy.LevelNone || r.ClientEffort || len(r.Fields) > 0) {
		p.add(path+".format", "is required when reasoning is configured")
	}
	r.LevelBudgets = map[policy.Level]int{}
	for name, n := range r.Budgets {
		l, err := policy.Level(0).Parse(name)
		switch {
		case err != nil || l <= policy.Off:
			p.add(path+".budgets."+name, "is not a level; use low, medium or high")
		case n < 1:
			p.add(path+".budgets."+name, "must be a positive number of tokens, got %d", n)
		}
		r.LevelBudgets[l] = n
	}
	if len(r.Custom) > 0 && r.Format.Value != policy.FormatCustom {
		p.add(path+".custom", "is only used with format: custom")
	}
	r.LevelCustom = map[policy.Level]map[string]any{}
	for name, fields := range r.Custom {
		l, err := policy.Level(0).Parse(name)
		if err != nil || l == policy.LevelNone {
			p.add(path+".custom."+name, "is not a level; use off, low, medium or high")
		}
		r.LevelCustom[l] = fields
		checkProtected(p, path+".custom."+name, fields)
	}
	checkProtected(p, path+".fields", r.Fields)
}

func checkProtected(p *problems, path string, fields map[string]any) {
	for k := range fields {
		if slices.Contains(reasoningProtected, k) {
			p.add(path+"."+k, "may not be set by reasoning configuration: model, messages, stream and the output limit are the gateway's")
		}
	}
}

// checkThinkingBudgets refuses a config in which a route's thinking budget
// (at the route's level, on its upstreams' protocols) does not fit below
// the output limit its own budget, or a key that may use it, sets: every
// request would be refused (the output limit is never raised), so it is a
// config error, naming both numbers. It runs on a config otherwise valid.
func (c *Config) checkThinkingBudgets(p *problems) {
	for i := range c.Routes {
		r := &c.Routes[i]
		thinking := 0
		for _, d := range r.Upstreams {
			if u, ok := c.Upstream(d.Name); ok {
				thinking = max(thinking, r.Reasoning.ThinkingBudget(u.Protocol.Value))
			}
		}
		if thinking == 0 {
			continue
		}
		if l := r.Budget.Limits().MaxOutputTokens; l != budget.Unlimited && thinking >= l {
			p.add(fmt.Sprintf("routes[%d].reasoning", i), "the thinking budget (%d tokens) must be below the route's output limit (max_output_tokens %d)", thinking, l)
		}
		for k := range c.Keys {
			key := &c.Keys[k]
			if l := key.Budget.Limits().MaxOutputTokens; l != budget.Unlimited && thinking >= l && key.MayUse(r.Model) {
				p.add(fmt.Sprintf("keys[%d].budget", k), "the key's output limit (max_output_tokens %d) is not above routes[%d]'s thinking budget (%d tokens): every request of the key on the route would be refused; raise the key's max_output_tokens or lower the route's reasoning level", l, i, thinking)
			}
		}
	}
}

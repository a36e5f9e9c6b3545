package config

import (
	"net/http"
	"time"
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

// DefaultResponsesMaxBytes bounds the memory store of responses.
const DefaultResponsesMaxBytes = 256 << 20

// DefaultPathMethods are the methods a path rule forwards unless it
// names its own.
var DefaultPathMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

// applyDefaults fills in every unset value with its documented default.
func (c *Config) applyDefaults() {
	setStr(&c.Listen, DefaultListen)
	setStr(&c.AdminListen, DefaultAdminListen)
	setBool(&c.Metrics.KeyLabels, true)
	if c.Log.FlushInterval == nil {
		d := time.Second
		c.Log.FlushInterval = &d
	}
	c.Log.Level.orDefault(DefaultLogLevel)
	setStr(&c.Sessions.Header, "X-Session-Id")
	setDur(&c.Sessions.Window, time.Hour)
	c.Responses.Store.orDefault("none")
	setDur(&c.Responses.TTL, 24*time.Hour)
	c.Responses.maxBytesSet, c.Responses.perKeySet = c.Responses.MaxBytes != 0, c.Responses.MaxBytesPerKey != 0
	setNum(&c.Responses.MaxBytes, DefaultResponsesMaxBytes)
	setNum(&c.Responses.MaxBytesPerKey, c.Responses.MaxBytes/4)
	c.State.Store.orDefault("memory")
	setStr(&c.State.Prefix, "toolgate:")
	setDur(&c.State.Timeout, 250*time.Millisecond)
	c.State.OnError.orDefault("fail_open")
	c.Server.defaults()
	c.FitMemory(c.Server.MemoryLimit)
	for i := range c.Keys {
		c.Keys[i].Budget.defaults()
	}
	for i := range c.Upstreams {
		c.Upstreams[i].defaults()
	}
	for i := range c.Routes {
		c.Routes[i].defaults()
	}
}

func (s *Server) defaults() {
	setDur(&s.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDur(&s.IdleTimeout, DefaultIdleTimeout)
	setDur(&s.DrainTimeout, DefaultDrainTimeout)
	setDur(&s.WriteIdleTimeout, DefaultWriteIdleTimeout)
	setNum(&s.MaxBodyBytes, DefaultMaxBodyBytes)
	setDur(&s.ReadBodyTimeout, DefaultReadBodyTimeout)
	setNum(&s.MaxPendingRequests, DefaultMaxPending)
	setNum(&s.MaxPendingPerIP, DefaultMaxPendingPerIP)
	setNum(&s.MaxPendingKeyless, max(s.MaxPendingRequests/2, 1))
	setNum(&s.PendingIPv4Prefix, 32)
	setNum(&s.PendingIPv6Prefix, 64)
	setNum(&s.MaxMessages, 10000)
	setNum(&s.MaxTools, 512)
}

func (u *Upstream) defaults() {
	u.Protocol.orDefault("openai")
	u.Auth.orDefault("key")
	switch u.Protocol.Name {
	case "anthropic":
		setStr(&u.AuthHeader, "x-api-key")
		setStr(&u.AnthropicVersion, DefaultAnthropicVersion)
		setNum(&u.DefaultMaxTokens, DefaultMaxTokens)
	case "gemini":
		setStr(&u.AuthHeader, "x-goog-api-key")
	case "bedrock":
		setNum(&u.DefaultMaxTokens, DefaultMaxTokens)
	}
	setStr(&u.AuthHeader, DefaultAuthHeader)
	setDur(&u.ConnectTimeout, DefaultConnectTimeout)
	setDur(&u.HeaderTimeout, DefaultHeaderTimeout)
	setDur(&u.ReadIdleTimeout, DefaultHeaderTimeout)
	setNum(&u.MaxErrorBodyBytes, DefaultMaxErrorBodyBytes)
	setNum(&u.MaxResponseBytes, DefaultMaxResponseBytes)
	setNum(&u.MaxEventBytes, DefaultMaxEventBytes)
	u.ToolCallContent.orDefault("keep")
	if len(u.Quirks) == 0 {
		u.Quirks = Quirks{"all"}
	}
	u.ReasoningField.orDefault("reasoning_content")
	u.OutputLimitField.orDefault("max_tokens")
}

func (r *Route) defaults() {
	setStr(&r.Name, r.Model)
	r.Repair.orDefault("fix")
	r.Policy.orDefault("session")
	r.ValidateArguments.orDefault("annotate")
	r.ToolCalls.orDefault("stream")
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
	r.Reasoning.Output.orDefault("reasoning_content")
	r.Reasoning.OnMiss.orDefault("send")
	r.Reasoning.ForcedToolChoice.orDefault("auto")
	r.Budget.defaults()
	for _, b := range []**bool{&r.Normalize.ArgumentsToString, &r.Normalize.SynthesizeIDs, &r.Normalize.DedupeCallIDs} {
		setBool(b, true)
	}
}

// defaults fills in a budget block's settings (nil: none).
func (b *Budget) defaults() {
	if b != nil {
		b.OnInputOver.orDefault("refuse")
		b.CostWindow.orDefault("day")
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

func setStr(s *string, def string) {
	if *s == "" {
		*s = def
	}
}

func setNum[T int | int64](n *T, def T) {
	if *n == 0 {
		*n = def
	}
}

func setBool(b **bool, def bool) {
	if *b == nil {
		*b = &def
	}
}

// DefaultReasoningMaxBytes bounds the in-memory store of remembered
// reasoning.
const DefaultReasoningMaxBytes = 256 << 20

// FitMemory makes the default bounds of the in-memory stores shares of
// limit, the memory the gateway may use (server.memory_limit, or the
// container's): responses.max_bytes a fifth (and each key's share a
// quarter of that), the remembered reasoning a tenth — each at most its
// default, and only where the config does not set it. So that a gateway
// whose stores are full still fits its container: the live heap the
// stores hold is at most three tenths of the limit, which leaves the
// collector's goal (twice the live heap) under the runtime's soft limit,
// 90% of it (docs/operations.md).
func (c *Config) FitMemory(limit int64) {
	if limit <= 0 {
		return
	}
	c.Server.MemoryLimit = limit
	if !c.Responses.maxBytesSet {
		c.Responses.MaxBytes = min(DefaultResponsesMaxBytes, limit/5)
	}
	if !c.Responses.perKeySet {
		c.Responses.MaxBytesPerKey = c.Responses.MaxBytes / 4
	}
	c.Responses.MaxBytesPerKey = min(c.Responses.MaxBytesPerKey, c.Responses.MaxBytes)
}

// ReasoningMaxBytes is the bound of the in-memory store of remembered
// reasoning: a tenth of server.memory_limit, at most
// DefaultReasoningMaxBytes.
func (c *Config) ReasoningMaxBytes() int64 {
	if c.Server.MemoryLimit > 0 {
		return min(DefaultReasoningMaxBytes, c.Server.MemoryLimit/10)
	}
	return DefaultReasoningMaxBytes
}

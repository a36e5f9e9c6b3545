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

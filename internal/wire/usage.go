package wire

import (
	"encoding/json"
	"strconv"
)

// Usage is the token usage an upstream reported for one response.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// CachedTokens are the prompt tokens read from the upstream's cache
	// (prompt_tokens_details.cached_tokens), part of PromptTokens.
	CachedTokens int64 `json:"-"`
}

// ParseUsage reads a usage object; ok is false for null or anything that
// is not an object. A missing total is the sum of the other two.
func ParseUsage(raw json.RawMessage) (u Usage, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return Usage{}, false
	}
	o, err := ParseObject(raw)
	if err != nil {
		return Usage{}, false
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"prompt_tokens", &u.PromptTokens}, {"completion_tokens", &u.CompletionTokens}, {"total_tokens", &u.TotalTokens}} {
		if v, found := o.Get(f.key); found && string(v) != "null" {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return Usage{}, false
			}
			*f.dst = n
		}
	}
	if d, found := o.Get("prompt_tokens_details"); found && len(d) > 0 && d[0] == '{' {
		if do, err := ParseObject(d); err == nil {
			if v, found := do.Get("cached_tokens"); found {
				u.CachedTokens, _ = strconv.ParseInt(string(v), 10, 64)
			}
		}
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u, true
}

// snapshot merges another report of the same response's usage: upstreams
// that repeat usage send cumulative snapshots (docs/quirks.md A25), so each field
// keeps its largest value; nothing is summed.
func (u *Usage) snapshot(o Usage) {
	u.PromptTokens = max(u.PromptTokens, o.PromptTokens)
	u.CompletionTokens = max(u.CompletionTokens, o.CompletionTokens)
	u.TotalTokens = max(u.TotalTokens, o.TotalTokens)
	u.CachedTokens = max(u.CachedTokens, o.CachedTokens)
}

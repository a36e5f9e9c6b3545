package wire

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Usage is the token usage an upstream reported for one response.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
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
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u, true
}

// snapshot merges another report of the same response's usage: upstreams
// that repeat usage send cumulative snapshots (QUIRKS A25), so each field
// keeps its largest value; nothing is summed.
func (u *Usage) snapshot(o Usage) {
	u.PromptTokens = max(u.PromptTokens, o.PromptTokens)
	u.CompletionTokens = max(u.CompletionTokens, o.CompletionTokens)
	u.TotalTokens = max(u.TotalTokens, o.TotalTokens)
}

// hasUsage reports whether a chunk's payload carries a usage object (not
// null), without decoding it.
func hasUsage(data string) bool {
	for {
		i := strings.Index(data, `"usage"`)
		if i < 0 {
			return false
		}
		rest := strings.TrimLeft(data[i+len(`"usage"`):], " \t\r\n")
		if rest != "" && rest[0] == ':' {
			rest = strings.TrimLeft(rest[1:], " \t\r\n")
			if rest != "" && rest[0] == '{' {
				return true
			}
		}
		data = data[i+1:]
	}
}

// takeUsage records a chunk's usage and, when HoldUsage is set, takes it
// out of the chunk: drop reports a chunk left with nothing to send (a
// usage-only chunk, QUIRKS A22).
func (s *Restream) takeUsage(data string) (out string, drop bool) {
	o, err := ParseObject([]byte(data))
	if err != nil {
		return data, false // reported by Chunk
	}
	raw, _ := o.Get("usage")
	if u, ok := ParseUsage(raw); ok {
		s.Usage.snapshot(u)
		s.UsageSeen = true
		s.usageRaw = append(s.usageRaw[:0], raw...)
	}
	if !s.HoldUsage {
		return data, false
	}
	if choices, ok := o.Get("choices"); !ok || string(choices) == "null" || strings.TrimSpace(strings.Trim(string(choices), "[]")) == "" {
		return "", true
	}
	o.Delete("usage")
	return string(o.JSON()), false
}

// UsageChunk returns the one usage chunk to send at the end of a stream in
// HoldUsage mode, "" when the upstream reported none: the last usage object
// the upstream sent, its token counts the largest reported, with
// "choices": [] (what OpenAI sends for stream_options.include_usage).
func (s *Restream) UsageChunk() string {
	if !s.UsageSeen {
		return ""
	}
	u, _ := ParseObject(s.usageRaw)
	u.Set("prompt_tokens", json.RawMessage(strconv.FormatInt(s.Usage.PromptTokens, 10)))
	u.Set("completion_tokens", json.RawMessage(strconv.FormatInt(s.Usage.CompletionTokens, 10)))
	u.Set("total_tokens", json.RawMessage(strconv.FormatInt(s.Usage.TotalTokens, 10)))
	o := Object{members: append([]member(nil), s.head...)}
	o.Set("choices", json.RawMessage(`[]`))
	o.Set("usage", u.JSON())
	return string(o.JSON())
}

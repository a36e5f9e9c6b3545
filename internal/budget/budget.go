package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/enum"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// Unlimited is the value of a limit that does not apply.
const Unlimited = -1

// Limits are a resolved budget. A value of Unlimited does not apply.
type Limits struct {
	MaxCalls        int
	MaxInputChars   int
	MaxOutputChars  int
	MaxOutputTokens int
	CallTimeout     time.Duration // Unlimited (as a Duration) for none
}

// NoLimits returns the budget of an unbudgeted route.
func NoLimits() Limits {
	return Limits{MaxCalls: Unlimited, MaxInputChars: Unlimited, MaxOutputChars: Unlimited, MaxOutputTokens: Unlimited, CallTimeout: Unlimited}
}

// Preset names a budget preset of docs/spec.md §5's table: small, medium or large
// ("" is medium).
type Preset uint8

// Presets.
const (
	PresetDefault Preset = iota // none named: medium
	PresetSmall
	PresetMedium
	PresetLarge
)

var presetNames = []string{"", "small", "medium", "large"}

func (p Preset) String() string { return presetNames[p] }

// Names are the configured names of the presets.
func (Preset) Names() []string { return slices.Clone(presetNames) }

// Parse reads a configured preset ("" is medium's).
func (Preset) Parse(s string) (Preset, error) { return enum.Parse[Preset](presetNames, s) }

// Limits returns the preset's limits, exactly as docs/spec.md §5's table.
func (p Preset) Limits() Limits {
	switch p {
	case PresetSmall:
		return Limits{MaxCalls: 2, MaxInputChars: 8000, MaxOutputChars: 4000, MaxOutputTokens: 512, CallTimeout: 15000 * time.Millisecond}
	case PresetLarge:
		return Limits{MaxCalls: 16, MaxInputChars: 64000, MaxOutputChars: 32000, MaxOutputTokens: 4096, CallTimeout: 60000 * time.Millisecond}
	}
	return Limits{MaxCalls: 8, MaxInputChars: 32000, MaxOutputChars: 16000, MaxOutputTokens: 1024, CallTimeout: 30000 * time.Millisecond}
}

// Object is a budget as configured: a preset and exact values, each nil
// when not given (a given value, 0 included, is kept; Unlimited is -1).
type Object struct {
	Preset          Preset
	MaxCalls        *int
	MaxInputChars   *int
	MaxOutputChars  *int
	MaxOutputTokens *int
	CallTimeoutMs   *int
}

// InputAction is what a route does with a transcript over its
// max_input_chars.
type InputAction uint8

// Input actions.
const (
	InputRefuse InputAction = iota // 400, nothing sent (the default)
	InputTrim                      // whole oldest turns removed
)

var inputActionNames = []string{"refuse", "trim"}

func (a InputAction) String() string { return inputActionNames[a] }

// Names are the configured names of the actions.
func (InputAction) Names() []string { return slices.Clone(inputActionNames) }

// Parse reads a configured action: refuse or trim.
func (InputAction) Parse(s string) (InputAction, error) {
	return enum.Parse[InputAction](inputActionNames, s)
}

// Resolve returns the limits of a budget object: its preset (medium when
// none is named), then its exact values.
func Resolve(o Object) Limits {
	l := o.Preset.Limits()
	for _, f := range []struct {
		v   *int
		dst *int
	}{{o.MaxCalls, &l.MaxCalls}, {o.MaxInputChars, &l.MaxInputChars}, {o.MaxOutputChars, &l.MaxOutputChars}, {o.MaxOutputTokens, &l.MaxOutputTokens}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if o.CallTimeoutMs != nil {
		l.CallTimeout = time.Duration(*o.CallTimeoutMs) * time.Millisecond
		if *o.CallTimeoutMs == Unlimited {
			l.CallTimeout = Unlimited
		}
	}
	return l
}

// Stricter returns, limit by limit, the stricter of a and b (Unlimited is
// the least strict).
func Stricter(a, b Limits) Limits {
	min := func(x, y int) int {
		switch {
		case x == Unlimited:
			return y
		case y == Unlimited:
			return x
		}
		return minInt(x, y)
	}
	return Limits{
		MaxCalls:        min(a.MaxCalls, b.MaxCalls),
		MaxInputChars:   min(a.MaxInputChars, b.MaxInputChars),
		MaxOutputChars:  min(a.MaxOutputChars, b.MaxOutputChars),
		MaxOutputTokens: min(a.MaxOutputTokens, b.MaxOutputTokens),
		CallTimeout:     time.Duration(min(int(a.CallTimeout), int(b.CallTimeout))),
	}
}

func minInt(x, y int) int {
	if x < y {
		return x
	}
	return y
}

// ErrCallTimeout is the cause of a context whose call deadline passed.
var ErrCallTimeout = errors.New("budget: the call timeout passed")

// Limit names a limit a request can be refused or cut by.
type Limit uint8

// The limits. Their names are the access log's "limited" and the reason
// label of toolgate_budget_rejections_total.
const (
	MaxCalls          Limit = iota + 1 // a session's model calls (429)
	MaxInputChars                      // the transcript's characters (400)
	MaxOutputChars                     // the answer's characters (cut: finish_reason "length")
	CallTimeout                        // the upstream call's deadline (504)
	RequestsPerMinute                  // a key's requests a minute (429)
	TokensPerMinute                    // a key's tokens a minute (429)
	StateUnavailable                   // the counter store unreachable with fail_closed (503)
	MaxCost                            // a key's spend in its day or month (429 insufficient_quota)
)

var limitNames = [...]string{"", "maxCalls", "maxInputChars", "maxOutputChars", "callTimeoutMs", "requests_per_minute", "tokens_per_minute", "state_unavailable", "max_cost_usd"}

func (l Limit) String() string {
	if int(l) < len(limitNames) {
		return limitNames[l]
	}
	return "limit(" + strconv.Itoa(int(l)) + ")"
}

// LimitError is a request over one of its limits.
type LimitError struct {
	Limit Limit
	Max   int
	Got   int
	// RetryAfter is when a window limit (maxCalls, a rate) allows again;
	// 0 if none.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: the request has %d, the limit is %d", e.Limit, e.Got, e.Max)
}

// StateError is a request refused because the counter store could not be
// reached and the state's on_error is fail_closed.
type StateError struct{ Err error }

func (e *StateError) Error() string { return "state store unavailable: " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// InputChars counts the characters of a transcript's text: every string
// a message holds that the model reads as text (see TextChars); kept
// holds the client's blocks or items its messages keep by index, for a
// request a client API's translator made (wire.ChatRequest.Kept).
func InputChars(msgs []wire.Message, kept []json.RawMessage) int {
	n := 0
	for i := range msgs {
		n += messageChars(&msgs[i], kept)
	}
	return n
}

// notText are the member keys whose values a model does not read as
// text, or which hold binary data: roles, types, ids, statuses, opaque
// signatures and encrypted reasoning, base64 data, media types, image and
// file URLs (a binary part is bounded by the body's size and the bounds
// on parts, not by characters).
var notText = map[string]bool{
	"role": true, "type": true, "id": true, "tool_call_id": true, "call_id": true, "tool_use_id": true, "status": true,
	"signature": true, "encrypted_content": true, "thought_signature": true, "thoughtSignature": true,
	"file_data": true, "media_type": true, "mime_type": true, "mimeType": true, "url": true, "image_url": true,
	"file_id": true, "file_url": true, "detail": true, "cache_control": true, "index": true,
}

// textRule is how TextChars counts a member: notText's are skipped, and
// "data" is counted only as a text source's (Anthropic's document
// {"type":"text","data":…}), never as base64.
func textRule(k string) wire.TextRule {
	switch {
	case notText[k]:
		return wire.TextSkip
	case k == "data":
		return wire.TextIfText
	}
	return wire.TextCount
}

// TextChars counts what a model reads as text in a JSON value: the
// characters of its strings, but for the members notText names (and
// binary data).
func TextChars(raw []byte) int { return wire.TextChars(raw, textRule) }

// messageChars counts a message's text: every string of the message as
// received (its content in any shape — parts, documents, search results,
// tool results —, the calls' names and arguments, past thinking), but
// notText's. A message a client API's translation made for a route of
// its own protocol keeps the client's blocks or items as they were sent
// beside their chat form (by their index in kept): those are counted,
// once, and the chat form not (a message whose kept blocks cannot be
// read is counted, as it is then sent, by its chat form).
func messageChars(m *wire.Message, kept []json.RawMessage) int {
	if m.Raw != nil {
		n, found := 0, false
		for _, k := range [...]string{translate.BlocksMember, translate.ItemsMember} {
			for _, v := range translate.Kept(nil, kept, *m, k) {
				n, found = n+TextChars(v), true
			}
		}
		if found {
			return n
		}
		if m.ContentApart() {
			n = TextChars(m.Content) // named by its index: not in Raw
		}
		return n + TextChars(m.Raw)
	}
	n := 0
	if len(m.Content) > 0 {
		n += TextChars(m.Content)
	}
	for _, c := range m.ToolCalls {
		n += utf8.RuneCountInString(c.Function.Name) + utf8.RuneCountInString(c.Function.ArgumentsText())
	}
	return n
}

// settings are the top-level members of a chat request that are no text
// a model reads: the model, numbers, switches, ids and labels.
var settings = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "user": true, "metadata": true, "store": true,
	"service_tier": true, "reasoning_effort": true, "max_tokens": true, "max_completion_tokens": true, "temperature": true,
	"top_p": true, "top_k": true, "n": true, "seed": true, "logprobs": true, "top_logprobs": true, "parallel_tool_calls": true,
	"tool_choice": true, "modalities": true, "audio": true, "safety_identifier": true, "prompt_cache_key": true,
	"thinking": true, "frequency_penalty": true, "presence_penalty": true, "logit_bias": true, "verbosity": true,
	"web_search_options": true, "stop": true,
}

// RequestChars counts what the model reads as text outside the
// messages: tools' names, descriptions and schemas, a response format's
// schema, a prediction, members no protocol here knows, and what a
// client API's translation carries for its own protocol (a Responses or
// Messages client's tools as declared, counted once); settings are not.
func RequestChars(req *wire.ChatRequest) int {
	kept := false // the client's tools, as declared, are in a carried member
	for _, k := range [...]string{translate.RequestMember, translate.ResponsesRequestMember} {
		if v, ok := req.Get(k); ok {
			_, has := wire.Member(v, "tools")
			kept = kept || has
		}
	}
	n := 0
	for k, v := range req.Members() {
		if settings[k] || k == "tools" && kept {
			continue
		}
		n += TextChars(v)
	}
	return n
}

// TrimReport says what Trim removed.
type TrimReport struct {
	Removed int // messages removed
}

// Trim fits a transcript into maxChars by removing whole turns, oldest
// first, keeping system and developer messages and the latest user turn;
// fixed is the text of the rest of the request (RequestChars), which
// counts and stays. With trim false, a transcript over the limit is
// refused. Either way, a transcript that cannot fit is a *LimitError.
// The input is not modified. kept is as for InputChars.
func Trim(msgs []wire.Message, kept []json.RawMessage, fixed, maxChars int, trim bool) ([]wire.Message, TrimReport, error) {
	total := fixed + InputChars(msgs, kept)
	if maxChars == Unlimited || total <= maxChars {
		return msgs, TrimReport{}, nil
	}
	if !trim {
		return nil, TrimReport{}, &LimitError{Limit: MaxInputChars, Max: maxChars, Got: total}
	}
	// turnOf numbers the turns: messages before the first user message are
	// turn 0, and each user message starts the next one.
	turnOf := make([]int, len(msgs))
	turns := 0
	for i := range msgs {
		if msgs[i].Role == "user" {
			turns++
		}
		turnOf[i] = turns
	}
	// Whole turns go, oldest first, until the rest fits; turnOf never
	// decreases, so one pass over the messages finds them. The latest user
	// turn (turns) is kept.
	drop := make([]bool, len(msgs))
	for i := 0; i < len(msgs) && turnOf[i] < turns && total > maxChars; {
		t := turnOf[i]
		for ; i < len(msgs) && turnOf[i] == t; i++ {
			if !keep(&msgs[i]) {
				drop[i] = true
				total -= messageChars(&msgs[i], kept)
			}
		}
	}
	if total > maxChars {
		return nil, TrimReport{}, &LimitError{Limit: MaxInputChars, Max: maxChars, Got: total}
	}
	out := make([]wire.Message, 0, len(msgs))
	for i := range msgs {
		if !drop[i] {
			out = append(out, msgs[i])
		}
	}
	return out, TrimReport{Removed: len(msgs) - len(out)}, nil
}

func keep(m *wire.Message) bool { return m.Role == "system" || m.Role == "developer" }

// EnsureOutput sets field to n when the request has no output limit
// (neither max_completion_tokens nor max_tokens, or both null), so that
// the limit a spend reservation counts is the one sent. It reports
// whether it changed the request.
func EnsureOutput(req *wire.ChatRequest, n int, field string) bool {
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := req.Get(f); ok && string(raw) != "null" {
			return false
		}
	}
	req.Set(field, json.RawMessage(strconv.Itoa(n)))
	return true
}

// ClampOutput limits the request's output tokens to max: the
// max_completion_tokens and max_tokens it has are lowered to max; when it
// has neither, field (the upstream's) is set to max. It reports whether it
// changed the request.
func ClampOutput(req *wire.ChatRequest, max int, field string) bool {
	if max == Unlimited {
		return false
	}
	changed, found := false, false
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		raw, ok := req.Get(f)
		if !ok || string(raw) == "null" {
			continue
		}
		found = true
		if n, err := strconv.Atoi(string(raw)); err != nil || n > max {
			req.Set(f, json.RawMessage(strconv.Itoa(max)))
			changed = true
		}
	}
	if !found {
		req.Set(field, json.RawMessage(strconv.Itoa(max)))
		changed = true
	}
	return changed
}

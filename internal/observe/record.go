package observe

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Record is everything known about one request when it ends: filled by the
// gateway from what each stage returned, and emitted once, as one
// access-log line (Log) and every metric the request moves (Metrics.Observe):
// the two cannot disagree. Its fields are plain values, so that observe
// knows nothing of the pipeline's types. A Record is owned by one
// request's goroutine.
type Record struct {
	RequestID string
	Method    string
	Path      string
	Route     string // configured route name, "" when none matched
	Key       string // the client key's configured name, "" when the gateway is open
	Upstream  string // configured upstream name, "" when none was called
	Model     string // model name sent upstream
	// RequestModel is the client's model name and MaxTokens the output
	// limit it asked for (0: none), set for the trace (tracing on);
	// FinishReason is the answer's (choice 0).
	RequestModel string
	MaxTokens    int64
	FinishReason string
	// ResponseModel is the model the upstream reported, "" when it named
	// none (set with tracing on).
	ResponseModel string
	// TraceID is the request's trace (its server span's, or the client's
	// traceparent when tracing is off), "" for none.
	TraceID string
	Stream  bool
	// Status is the HTTP status sent, or 499 when the client went away
	// before one could be.
	Status int
	// Outcome is one of the Outcome… constants.
	Outcome string
	// ErrorKind is the upstream error kind (connect, timeout, status,
	// stream, protocol) when the upstream failed, else "". protocol is a
	// response that violates the completion policy.
	ErrorKind string
	// Error is the error's text, for the log only.
	Error string
	// Panicked: handling the request panicked (toolgate_panics_total).
	Panicked bool

	Start            time.Time
	Duration         time.Duration
	UpstreamDuration time.Duration // 0 when no upstream call was made
	// TTFB is the time from the request's start to the first streamed event
	// sent to the client; 0 for non-streamed requests.
	TTFB       time.Duration
	BytesIn    int64
	BytesOut   int64
	ClientGone bool
	// Repair is the transcript repair summary ("sealed=1; dropped=0; moved=0"),
	// or "" when nothing was repaired.
	Repair string
	// Normalize is the request normalization summary
	// ("synthesized_ids=1"), or "" when nothing was normalized.
	Normalize string
	// Repairs counts repair and request-normalization actions by name
	// (sealed, dropped, moved, rejected, arguments_to_string, …).
	Repairs []Count
	// RepairDetail is what repair did, by message and call id, with the
	// transcript's outline before and after: set only for the console
	// (nil when it is off or nothing was repaired).
	RepairDetail *RepairDetail
	// Limited names the budget or rate limit that refused the request or
	// ended its response early (maxCalls, requests_per_minute,
	// maxOutputChars, callTimeoutMs, state_unavailable, …), or "".
	Limited string
	// Trimmed counts messages removed to fit the input budget.
	Trimmed int
	// Fallback names the fallback route that served (or last tried) the
	// request, "" when the request's own route did.
	Fallback string
	// Attempts are the upstream attempts, in order.
	Attempts []Attempt
	// PromptTokens, CompletionTokens and TotalTokens are the usage the
	// upstream reported (summed over attempts); 0 when it reported none.
	PromptTokens, CompletionTokens, TotalTokens int64
	// CachedTokens are the prompt tokens the upstream read from its cache.
	CachedTokens int64
	// CostUSD is what the usage cost by the configured prices, and
	// CostModel the pricing entry that priced it ("" when unpriced).
	CostUSD   float64
	CostModel string
	// Reasoning is the reasoning level sent upstream, or "".
	Reasoning string
	// ReasoningRestored counts assistant turns whose reasoning was put back.
	ReasoningRestored int
	// ReasoningPlaceholder counts assistant turns sent with the upstream's
	// documented placeholder for state the gateway did not have (Gemini's
	// skip_thought_signature_validator).
	ReasoningPlaceholder int
	// ReasoningMiss counts assistant tool-call turns whose reasoning was
	// to be restored but was not in the store.
	ReasoningMiss int
	// Arguments lists tool calls whose arguments failed validation in
	// annotate mode, or ""; InvalidArguments counts them.
	Arguments        string
	InvalidArguments int
	// StateErrors names the state-store operations that failed (admit,
	// add_tokens, reasoning_get, reasoning_put), and StateMode the
	// state.on_error applied.
	StateErrors []string
	StateMode   string
}

// RepairDetail is what repair did to a transcript: each action, and the
// transcript's outline (roles and call ids, never content) before and
// after, around the messages the actions name.
type RepairDetail struct {
	Actions       []RepairAction
	Before, After []Turn
	// Omitted counts the actions left out of Actions (it holds the first
	// hundred).
	Omitted int
}

// RepairAction is one thing repair did: sealed (the call made in
// message Index had no reply), dropped or moved (the tool message at
// Index of the input).
type RepairAction struct {
	Action string
	Index  int
	CallID string
}

// Turn is one message of a transcript's outline: its position, its role
// and the call ids it makes (an assistant's) or answers (a tool's).
type Turn struct {
	Index int
	Role  string
	IDs   []string
	// Text is the message's text, clipped and with what looks like a key
	// redacted; "" unless the console keeps content (console.inspect).
	Text string
}

// Count is a number of things of one kind. For a normalization of a
// streamed answer, At is the upstream chunk (from 1) it was first applied
// at (0: not known, or not a stream).
type Count struct {
	Name string
	N    int
	At   int
}

// Attempt is one upstream attempt: where it went, what became of it
// (one of the Attempt… outcomes), the completion policy's verdict on its response when it
// was judged (ok, incomplete, violation), and the normalizations its
// response needed.
type Attempt struct {
	Route, Upstream string
	Outcome         AttemptOutcome
	Verdict         string
	Fixes           []Count
	// Cooldown is why the attempt put its deployment in cooldown
	// (rate_limited, status_5xx, unreachable), or "".
	Cooldown string
	// Provider is the upstream's protocol (gen_ai.provider.name: openai,
	// anthropic), Model the model name sent to it.
	Provider, Model string
}

// Calls is the number of upstream calls made (a resend on a fresh
// connection is part of its call).
func (r *Record) Calls() int {
	n := 0
	for _, a := range r.Attempts {
		if a.Outcome != AttemptReconnected {
			n++
		}
	}
	return n
}

// Fixes is the access log's summary of the response normalizations of
// every attempt ("finish_reason=1; index_reuse=1"), in name order.
func (r *Record) Fixes() string {
	var all []Count
	for _, a := range r.Attempts {
	next:
		for _, f := range a.Fixes {
			for i := range all {
				if all[i].Name == f.Name {
					all[i].N += f.N
					continue next
				}
			}
			all = append(all, f)
		}
	}
	slices.SortFunc(all, func(a, b Count) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for _, c := range all {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.Name + "=" + strconv.Itoa(c.N))
	}
	return b.String()
}

// AttemptLog lists each attempt's outcome in order ("status_5xx,ok").
func (r *Record) AttemptLog() string {
	var b strings.Builder
	for i, a := range r.Attempts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(a.Outcome))
	}
	return b.String()
}

// AttemptOutcome is how one upstream attempt ended: the access line's
// attempts=, toolgate_upstream_attempts_total{outcome} and the attempt
// span's toolgate.attempt.outcome.
type AttemptOutcome string

// Outcomes of an upstream attempt.
const (
	AttemptOK          AttemptOutcome = "ok"          // answered in full
	AttemptConnect     AttemptOutcome = "connect"     // no response: dial, TLS, a reset before headers
	AttemptTimeout     AttemptOutcome = "timeout"     // a deadline passed
	AttemptStatus429   AttemptOutcome = "status_429"  // rate limited
	AttemptStatus5xx   AttemptOutcome = "status_5xx"  // the upstream failed
	AttemptStatus4xx   AttemptOutcome = "status_4xx"  // the upstream refused the request
	AttemptIncomplete  AttemptOutcome = "incomplete"  // the answer broke off, or the gateway failed
	AttemptViolation   AttemptOutcome = "violation"   // the answer does not satisfy the request
	AttemptCanceled    AttemptOutcome = "canceled"    // the client left
	AttemptReconnected AttemptOutcome = "reconnected" // the send was repeated on a fresh connection (not a call of its own)
)

// Outcomes of a request, for the access log and metrics.
const (
	OutcomeOK         = "ok"         // answered in full
	OutcomeRejected   = "rejected"   // refused by the gateway before sending upstream
	OutcomeUpstream   = "upstream"   // the upstream answered with an error or failed
	OutcomeIncomplete = "incomplete" // a stream ended without its end marker
	OutcomeViolation  = "violation"  // the response does not satisfy the request (completion policy)
	OutcomeClientGone = "client_gone"
)

// Log writes the record as one info-level access line.
func (r *Record) Log(l *zap.Logger) {
	ce := l.Check(zap.InfoLevel, "access")
	if ce == nil {
		return
	}
	pooled := fieldSlices.Get().(*[]zap.Field)
	fields := append((*pooled)[:0],
		zap.String("request_id", r.RequestID),
		zap.String("method", r.Method),
		zap.String("path", r.Path),
		zap.Int("status", r.Status),
		zap.String("outcome", r.Outcome),
		zap.Duration("duration_ms", r.Duration),
		zap.Int64("bytes_in", r.BytesIn),
		zap.Int64("bytes_out", r.BytesOut),
	)
	fields = nonEmpty(fields, "route", r.Route, "key", r.Key)
	if r.Upstream != "" {
		fields = append(fields, zap.String("upstream", r.Upstream), zap.String("model", r.Model),
			zap.Duration("upstream_duration_ms", r.UpstreamDuration))
	}
	if r.Stream {
		fields = append(fields, zap.Bool("stream", true), zap.Duration("ttfb_ms", r.TTFB))
	}
	if r.ClientGone {
		fields = append(fields, zap.Bool("client_gone", true))
	}
	fields = nonEmpty(fields, "repair", r.Repair, "normalize", r.Normalize, "fixes", r.Fixes(), "limited", r.Limited)
	fields = count(fields, "trimmed", r.Trimmed)
	if r.TotalTokens > 0 {
		fields = append(fields, zap.Int64("tokens_in", r.PromptTokens), zap.Int64("tokens_out", r.CompletionTokens))
		if r.CachedTokens > 0 {
			fields = append(fields, zap.Int64("tokens_cached", r.CachedTokens))
		}
	}
	if r.CostModel != "" {
		fields = append(fields, zap.Float64("cost_usd", r.CostUSD))
	}
	fields = nonEmpty(fields, "trace_id", r.TraceID)
	fields = nonEmpty(fields, "reasoning", r.Reasoning)
	fields = count(fields, "reasoning_restored", r.ReasoningRestored)
	fields = count(fields, "reasoning_restore_misses", r.ReasoningMiss)
	fields = count(fields, "reasoning_placeholders", r.ReasoningPlaceholder)
	fields = nonEmpty(fields, "fallback", r.Fallback)
	if n := r.Calls(); n > 1 {
		fields = append(fields, zap.Int("attempts", n))
	}
	if len(r.Attempts) > 0 {
		fields = append(fields, zap.String("attempt_outcomes", r.AttemptLog()))
	}
	fields = nonEmpty(fields, "invalid_arguments", clip(r.Arguments), "error_kind", r.ErrorKind, "error", clip(r.Error))
	ce.Write(fields...) // the encoders copy what they keep
	clear(fields)
	*pooled = fields[:0]
	fieldSlices.Put(pooled)
}

// fieldSlices hold the access line's fields while it is written: one
// slice per line written at a time, rather than one per request.
var fieldSlices = sync.Pool{New: func() any { s := make([]zap.Field, 0, 32); return &s }}

// maxField bounds the free-text fields of the access line (the error, the
// argument validation failures), which may quote what a client sent.
const maxField = 1024

// clip cuts s to maxField bytes on a rune boundary, saying how long it
// was.
func clip(s string) string {
	if len(s) <= maxField {
		return s
	}
	cut := maxField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// nonEmpty appends each pair's string field (name, value, name, value…)
// whose value is not empty.
func nonEmpty(fields []zap.Field, pairs ...string) []zap.Field {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			fields = append(fields, zap.String(pairs[i], pairs[i+1]))
		}
	}
	return fields
}

// count appends the field name when n is above zero.
func count(fields []zap.Field, name string, n int) []zap.Field {
	if n > 0 {
		fields = append(fields, zap.Int(name, n))
	}
	return fields
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
	"go.uber.org/zap"
)

// chat serves POST /v1/chat/completions: the pipeline of DESIGN.md as one
// straight line, in two parts: chat (the request: key, body, route) and
// serve (one route's stages and attempts). Only these two branch on the
// stages' results.
func (g *Gateway) chat(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
	ctx := r.Context()
	// The key is checked before a byte of the body is read: a request
	// without one costs no more than its headers.
	key, err := g.authenticate(r)
	if err != nil {
		leaveBody(w)
		g.fail(w, r, rec, err)
		return
	}
	if key != nil {
		rec.Key = key.cfg.Name
	}
	defer g.metrics.KeyStarted(rec.Key)()
	defer g.settle(ctx, key, rec)
	body, err := g.readBody(w, r)
	g.pending.received(r)
	rec.BytesIn = int64(len(body))
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	req, err := wire.DecodeRequest(body)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	rec.Stream = req.Stream
	if n := len(req.Messages); n > g.cfg.Server.MaxMessages {
		g.fail(w, r, rec, &wire.DecodeError{Kind: wire.KindMissing, Param: "messages", Offset: -1,
			Msg: fmt.Sprintf("has %d messages; this gateway accepts at most %d (server.max_messages)", n, g.cfg.Server.MaxMessages)})
		return
	}
	route, ok := g.cfg.Match(req.Model)
	if !ok {
		g.fail(w, r, rec, &RouteError{Model: req.Model})
		return
	}
	if key != nil && !key.cfg.Allows(req.Model) {
		g.fail(w, r, rec, &AuthError{Status: http.StatusForbidden, Msg: "The key " + key.cfg.Name + " may not use the model `" + wire.Clip(req.Model) + "`; ask your gateway operator for access."})
		return
	}
	// The route, then its fallbacks in order, each with the request as the
	// client sent it, until one answers or a failure is not the upstream's.
	admitted, fallbacks := false, route.Fallbacks // a fallback's own fallbacks are not followed
	for i := 0; ; i++ {
		err := g.serve(w, r, rec, req, key, route, &admitted, i < len(fallbacks))
		if err == nil {
			return
		}
		if i == len(fallbacks) || !fallbackable(err) || r.Context().Err() != nil {
			if ue, ok := errors.AsType[*upstream.Error](err); ok && ue.Status == http.StatusTooManyRequests && ue.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(ue.RetryAfter)))
			}
			g.fail(w, r, rec, err)
			return
		}
		next, _ := g.cfg.Route(fallbacks[i])
		g.log.Debug("falling back", zap.String("request_id", rec.RequestID), zap.String("from", route.Name), zap.String("to", next.Name), zap.Error(err))
		rec.Fallback = next.Name
		if req, err = wire.DecodeRequest(body); err != nil { // the original bytes, decoded afresh
			g.fail(w, r, rec, err)
			return
		}
		route = next
	}
}

// serve runs the rest of the pipeline on one route: budgets, repair,
// policy, reasoning, admission (counted once per request, whatever the
// route), then the upstream attempts. It returns the failure it did not
// write: the caller may try a fallback route with it, or answer it.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, rec *observe.Record, req *wire.ChatRequest, key *clientKey, route *config.Route, admitted *bool, hasFallback bool) error {
	ctx := r.Context()
	up := g.upstreams[route.Upstream]
	upCfg, _ := g.cfg.Upstream(route.Upstream)
	rec.Route, rec.Upstream, rec.Model = route.Name, route.Upstream, wire.Clip(route.TargetModel(req.Model))

	limits := g.limits[route.Name]
	if key != nil {
		limits = budget.Stricter(limits, key.limits)
	}
	msgs := req.Messages
	if limits.MaxInputChars != budget.Unlimited {
		// Trimming runs before repair, so repair seals what it broke.
		trim := route.Budget != nil && route.Budget.OnInputOver == "trim" // a key's budget alone refuses
		trimmed, rep, err := budget.Trim(msgs, limits.MaxInputChars, trim)
		if err != nil {
			return err
		}
		if rep.Removed > 0 {
			msgs, rec.Trimmed = trimmed, rep.Removed
			req.SetMessages(msgs)
		}
	}
	msgs, fixes := repair.Normalize(msgs, steps(route, upCfg))
	var rep repair.Report
	if route.Repair != string(repair.ModeOff) {
		msgs, rep = repair.Repair(msgs)
	}
	if route.Repair == string(repair.ModeReject) && !rep.Empty() {
		g.metrics.Repaired(route.Name, "rejected", 1)
		return &repair.RejectError{Report: rep}
	}
	g.recordRepair(w, rec, fixes, rep)
	if len(msgs) == 0 {
		return &wire.DecodeError{Kind: wire.KindMissing, Param: "messages", Offset: -1,
			Msg: "has no message left once the tool messages that answer no call are dropped; send the conversation that the tool messages belong to"}
	}
	if fixes.Any() || !rep.Empty() {
		req.SetMessages(msgs)
	}
	judge, err := policy.Prepare(req, policy.Config{
		Mode:            policy.Mode(route.Policy),
		EnforceParallel: route.EnforceParallelToolCalls,
		Arguments:       route.ValidateArguments,
		Schemas:         g.schemas,
		MaxTools:        g.cfg.Server.MaxTools,
	})
	if err != nil {
		return err
	}
	// The output limit is clamped before reasoning checks its budget against it.
	budget.ClampOutput(req, limits.MaxOutputTokens, upCfg.OutputLimitField)
	reasoning := g.reasoning[route.Name]
	if upCfg.RestoreReasoning && upCfg.ReasoningField != "think" {
		msgs, restored, missed := policy.RestoreReasoning(req.Messages, upCfg.ReasoningField, g.store)
		if restored > 0 {
			rec.ReasoningRestored = restored
			req.SetMessages(msgs)
			g.metrics.Restored(rec.Route, "restored", restored)
		}
		if missed > 0 {
			g.metrics.Restored(rec.Route, "miss", missed)
			rec.ReasoningMiss = missed
			if route.Reasoning.OnMiss == "disable_thinking" {
				reasoning.Level, reasoning.ClientEffort = "off", false
			}
		}
	}
	if rec.Reasoning, err = policy.ApplyReasoning(req, reasoning); err != nil {
		return err
	}
	if upCfg.RefusesForcedToolChoice && rec.Reasoning != "" && rec.Reasoning != "off" && judge.Forced() {
		// This upstream refuses a forced tool_choice while thinking.
		if route.Reasoning.ForcedToolChoice == "disable_thinking" {
			reasoning.Level, reasoning.ClientEffort = "off", false
			rec.Reasoning, _ = policy.ApplyReasoning(req, reasoning) // level off: no budget to check
		} else {
			req.Set("tool_choice", json.RawMessage(`"auto"`)) // the judge still enforces the original
		}
	}
	if rec.Reasoning != "" {
		g.metrics.Reasoned(rec.Route, rec.Reasoning)
	}

	clientUsage := req.Stream && streamUsage(req, upCfg)
	out, err := req.Encode(route.TargetModel(req.Model))
	if err != nil {
		return err
	}

	// Counted admission comes last, once nothing else refused the request;
	// retries of this request do not count again.
	if !*admitted {
		if err := g.admit(ctx, w, r, req, key, limits, rec); err != nil {
			return err
		}
		*admitted = true
	}
	callCtx := ctx
	if limits.CallTimeout != budget.Unlimited {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, limits.CallTimeout, budget.ErrCallTimeout)
		defer cancel()
	}
	// Before anything reached the client, a failed attempt — no connection,
	// a 429 or 5xx, a response that broke off or violates the policy — may
	// be followed by another, route.Retries times, after a backoff (or the
	// upstream's Retry-After). After the first byte, never.
	for attempt := 0; ; attempt++ {
		rec.Attempts++
		retry := attempt < route.Retries
		// A failure is returned unwritten when another attempt, or a
		// fallback route, may follow.
		deferFail := retry || hasFallback
		sent := time.Now()
		resp, reconnected, err := up.Send(callCtx, out, r.Header, req.Stream)
		if reconnected {
			g.attempted(rec, "reconnected")
		}
		if err != nil {
			rec.UpstreamDuration += time.Since(sent)
			g.attempted(rec, attemptOutcome(err))
			if retry && retryable(err) && g.backoff(callCtx, rec, route, attempt, err) {
				continue
			}
			return err
		}
		idle := watchIdle(resp, upCfg.ReadIdleTimeout)
		if req.Stream {
			err = g.stream(w, r, callCtx, rec, resp, route, upCfg, judge, deferFail, limits.MaxOutputChars, clientUsage)
		} else {
			err = g.whole(w, r, rec, resp, route, upCfg, judge, deferFail)
		}
		idle.stop()
		resp.Body.Close()
		rec.UpstreamDuration += time.Since(sent)
		if err == nil {
			// Answered, or failed with what was written already.
			g.attempted(rec, recordedOutcome(rec))
			return nil
		}
		g.attempted(rec, attemptOutcome(err))
		if !retry || !g.backoff(callCtx, rec, route, attempt, err) {
			return err
		}
		g.log.Debug("retrying the upstream", zap.String("request_id", rec.RequestID), zap.Int("attempt", attempt+1), zap.Error(err))
	}
}

// idleWatch breaks off a response whose upstream stays silent for longer
// than its read_idle_timeout: the body is closed, so the pending read
// fails and the response ends as incomplete.
type idleWatch struct {
	io.ReadCloser
	t     *time.Timer
	idle  time.Duration
	fired atomic.Bool
}

func watchIdle(resp *http.Response, idle time.Duration) *idleWatch {
	w := &idleWatch{ReadCloser: resp.Body, idle: idle}
	w.t = time.AfterFunc(idle, func() {
		w.fired.Store(true)
		w.ReadCloser.Close()
	})
	resp.Body = w
	return w
}

func (w *idleWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	if n > 0 {
		w.t.Reset(w.idle)
	}
	if err != nil && w.fired.Load() {
		err = fmt.Errorf("%w (%v)", errUpstreamIdle, err)
	}
	return n, err
}

func (w *idleWatch) stop() { w.t.Stop() }

// errUpstreamIdle ends a response whose upstream fell silent.
var errUpstreamIdle = errors.New("the upstream sent nothing for read_idle_timeout")

// streamUsage reports whether a streamed request asked for usage
// (stream_options.include_usage), and makes sure the upstream is asked for
// it: the gateway counts tokens by key, and the usage chunk the client did
// not ask for is taken out of its stream. For an upstream that refuses
// stream_options the field is removed instead.
func streamUsage(req *wire.ChatRequest, up *config.Upstream) bool {
	opts := wire.Object{}
	if raw, ok := req.Get("stream_options"); ok && string(raw) != "null" {
		if o, err := wire.ParseObject(raw); err == nil {
			opts = o
		}
	}
	v, _ := opts.Get("include_usage")
	asked := string(v) == "true"
	switch {
	case up.NoStreamOptions:
		req.Delete("stream_options")
	case !asked:
		opts.Set("include_usage", json.RawMessage("true"))
		req.Set("stream_options", opts.JSON())
	}
	return asked
}

// session returns the request's session id: the configured header, else
// the request's "user" field, else its metadata's "session_id", else ""
// (not counted).
func (g *Gateway) session(r *http.Request, req *wire.ChatRequest) string {
	if id := r.Header.Get(g.cfg.Sessions.Header); id != "" {
		return id
	}
	if raw, ok := req.Get("user"); ok {
		var user string
		if json.Unmarshal(raw, &user) == nil && user != "" {
			return user
		}
	}
	if raw, ok := req.Get("metadata"); ok {
		var md struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(raw, &md) == nil {
			return md.SessionID
		}
	}
	return ""
}

// steps resolves the route's and upstream's normalization switches.
func steps(route *config.Route, up *config.Upstream) repair.Steps {
	n := route.Normalize
	return repair.Steps{
		StringifyArguments: *n.ArgumentsToString,
		SynthesizeIDs:      *n.SynthesizeIDs,
		DedupeCallIDs:      *n.DedupeCallIDs,
		ToolCallContent:    repair.ContentMode(up.ToolCallContent),
	}
}

// recordRepair tells the client (response headers), the access log and the
// metrics what repair and normalization did, when they did anything.
func (g *Gateway) recordRepair(w http.ResponseWriter, rec *observe.Record, fixes repair.Fixes, rep repair.Report) {
	if !rep.Empty() {
		rec.Repair = rep.Header()
		w.Header().Set(RepairHeader, rec.Repair)
		g.metrics.Repaired(rec.Route, "sealed", len(rep.Sealed))
		g.metrics.Repaired(rec.Route, "dropped", len(rep.Dropped))
		g.metrics.Repaired(rec.Route, "moved", len(rep.Moved))
	}
	if fixes.Any() {
		rec.Normalize = fixes.Header()
		w.Header().Set(NormalizeHeader, rec.Normalize)
		g.metrics.Repaired(rec.Route, "arguments_to_string", fixes.StringifiedArguments)
		g.metrics.Repaired(rec.Route, "synthesized_id", fixes.SynthesizedIDs)
		g.metrics.Repaired(rec.Route, "deduped_call_id", fixes.DedupedCallIDs)
		g.metrics.Repaired(rec.Route, "tool_call_content", fixes.ToolCallContent)
	}
}

// Response headers that report what the gateway did to the request.
const (
	// RepairHeader is set when transcript repair changed the request:
	// "sealed=N; dropped=N; moved=N".
	RepairHeader = "X-Toolgate-Repair"
	// NormalizeHeader is set when a request normalization changed it,
	// listing the non-zero counts, e.g. "synthesized_ids=1".
	NormalizeHeader = "X-Toolgate-Normalize"
)

// fail answers a request that has not committed anything yet: 499 in the
// record when the client is gone (nothing is written), otherwise the mapped
// status and OpenAI error body.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, rec *observe.Record, err error) {
	rec.Error = err.Error()
	noteLimit(rec, err)
	if ue, ok := errors.AsType[*upstream.Error](err); ok && ue.Kind != upstream.KindCanceled {
		rec.ErrorKind = string(ue.Kind)
		rec.Outcome = observe.OutcomeUpstream
	}
	if _, ok := errors.AsType[*IncompleteError](err); ok {
		rec.Outcome, rec.ErrorKind = outcomeOf(err)
	}
	if _, ok := errors.AsType[*ViolationError](err); ok {
		rec.Outcome, rec.ErrorKind = outcomeOf(err)
	}
	// A body read that failed cancels the request's context (net/http
	// does): an intake error is answered all the same.
	if _, intake := errors.AsType[*IntakeError](err); r.Context().Err() != nil && !intake {
		rec.Status, rec.Outcome, rec.ClientGone = 499, observe.OutcomeClientGone, true
		return
	}
	status, body := errorFor(err)
	g.writeError(w, rec, status, body)
}

// stream re-streams the upstream's SSE events to the client, event by event,
// each flushed at once.
//
// It returns an error, having written nothing, only when deferFail is set
// and the response failed before anything was sent: the caller may try
// again, or on a fallback route.
//
// clientUsage says the client asked for the usage chunk
// (stream_options.include_usage); usage it did not ask for is taken out.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, callCtx context.Context, rec *observe.Record, resp *http.Response, route *config.Route, up *config.Upstream, judge *policy.Judge, deferFail bool, maxChars int, clientUsage bool) error {
	ctx := r.Context()
	done := g.metrics.StreamStarted(rec.Route)
	defer done()

	rc := http.NewResponseController(w)
	dw := &deadlineWriter{w: w, rc: rc, idle: g.cfg.Server.WriteIdleTimeout, header: resp.Header}
	stop := context.AfterFunc(ctx, func() { rc.SetWriteDeadline(time.Now()) }) // unblock a stalled write
	defer func() {
		stop()
		rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	}()
	out := wire.NewWriter(dw)
	out.Lazy = true // flushed before each read of the upstream: a burst leaves as one write, nothing waits
	rs := wire.NewRestream(quirks(up), up.Quirks.Has("finish_reason"))
	rs.Buffer = route.ToolCalls == "buffer" || route.ValidateArguments == "reject"
	rs.KeepText = judge.NeedsText()
	rs.FixChunks = up.Quirks.Has("chunks")
	rs.ReasoningIn, rs.ReasoningOut = up.ReasoningField, route.Reasoning.Output
	rs.KeepText = rs.KeepText || up.RestoreReasoning || maxChars != budget.Unlimited
	rs.LimitText, rs.TextLimit = maxChars != budget.Unlimited, maxChars
	rs.SingleChoice = judge.SingleChoice()
	rs.HoldUsage = !clientUsage || up.Quirks.Has("usage")
	defer g.countNormalizations(rec, rs.Collector)
	defer func() { addUsage(rec, rs.Usage) }()

	var broken, protocol error
	complete := false
	for ev, err := range wire.Events(callCtx, wire.FlushBeforeRead(resp.Body, out), wire.ReadOptions{MaxEventSize: up.MaxEventBytes}) {
		if err != nil {
			broken = err
			break
		}
		if ev.Done {
			complete = true
			break
		}
		if ev.Data == "" {
			continue
		}
		if msg, ok := errorEvent(ev.Data); ok {
			broken = &IncompleteError{Upstream: rec.Upstream, Message: msg, Err: errors.New("error event")}
			break
		}
		data, send, err := rs.Chunk(ev.Data)
		if err != nil {
			protocol = err
			break
		}
		if send {
			if !out.Committed() {
				rec.TTFB = time.Since(rec.Start)
			}
			if err := out.Send(data); err != nil {
				rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
				rec.Error = "client write failed: " + err.Error()
				return nil
			}
		}
		if rs.TextCut {
			// The output budget is spent: the client has exactly
			// maxOutputChars of text, and the stream ends here, as "length".
			rec.Limited = "maxOutputChars"
			if rs.FinishReason == "" {
				if err := out.Send(rs.LengthChunk()); err != nil {
					rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
					return nil
				}
			}
			complete = true
			break
		}
	}
	if ctx.Err() != nil || errors.Is(broken, wire.ErrClientWrite) {
		rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
		if broken != nil {
			rec.Error = broken.Error()
		}
		return nil
	}
	if !complete && broken == nil && protocol == nil && rs.FinishReason != "" && up.Quirks.Has("no_done") {
		complete = true // QUIRKS A21: this upstream ends with a finish reason and no [DONE]
		rs.Collector.Fixes()["no_done"]++
	}
	if errors.Is(broken, budget.ErrCallTimeout) {
		return g.endStream(w, r, rec, out, &upstream.Error{Upstream: rec.Upstream, Kind: upstream.KindTimeout, Err: broken}, false)
	}
	if broken != nil {
		if _, ok := errors.AsType[*IncompleteError](broken); !ok {
			broken = &IncompleteError{Upstream: rec.Upstream, Err: broken}
		}
		return g.endStream(w, r, rec, out, broken, deferFail)
	}
	var tail []string // chunks sent only if the response is judged acceptable
	if complete && protocol == nil && rs.FinishReason == "" && up.Quirks.Has("missing_finish_reason") {
		tail = append(tail, rs.FinishChunk())
	}
	if t := rs.ThinkTail(); t != "" {
		tail = append([]string{t}, tail...)
	}
	if u := rs.UsageChunk(); u != "" && clientUsage && rs.HoldUsage {
		tail = append(tail, u) // once, last, as OpenAI sends it (QUIRKS A22, A25)
	}
	calls, callsErr := rs.Collector.Finish()
	if protocol != nil {
		callsErr = protocol
	}
	outcome := judge.Finish(policy.End{Done: complete, Calls: calls, CallsErr: callsErr, FinishReason: rs.FinishReason, Text: rs.Text.String()})
	g.judged(rec, outcome)
	switch outcome.Kind {
	case policy.OK:
		if up.RestoreReasoning {
			policy.RememberReasoning(g.store, rs.Reasoning.String(), calls, rs.Text.String())
		}
		for _, data := range append(rs.Flush(), tail...) {
			if err := out.Send(data); err != nil {
				rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
				return nil
			}
		}
		if err := out.Done(); err != nil {
			rec.ClientGone, rec.Outcome = true, observe.OutcomeClientGone
		} else {
			rec.Outcome = observe.OutcomeOK
		}
		rec.Status = http.StatusOK
	case policy.Incomplete:
		return g.endStream(w, r, rec, out, &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the stream ended without data: [DONE]")}, deferFail)
	default:
		return g.endStream(w, r, rec, out, &ViolationError{Upstream: rec.Upstream, Msg: outcome.Msg}, deferFail)
	}
	return nil
}

// judged records the judge's verdict: the completion metric, and in
// annotate mode the argument validation failures (access log and metric).
func (g *Gateway) judged(rec *observe.Record, o policy.Outcome) {
	g.metrics.Completed(rec.Route, o.Kind)
	if len(o.Annotations) > 0 {
		rec.Arguments = strings.Join(o.Annotations, "; ")
		g.metrics.InvalidArguments(rec.Route, len(o.Annotations))
	}
}

// endStream ends a stream that failed: with a status and JSON body if
// nothing was sent yet, else with one error event and no [DONE]. When
// nothing was sent and deferFail is set it writes nothing and returns err.
func (g *Gateway) endStream(w http.ResponseWriter, r *http.Request, rec *observe.Record, out *wire.Writer, err error, deferFail bool) error {
	if !out.Committed() {
		if deferFail && r.Context().Err() == nil {
			return err
		}
		g.fail(w, r, rec, err)
		return nil
	}
	rec.Status, rec.Error = http.StatusOK, err.Error()
	rec.Outcome, rec.ErrorKind = outcomeOf(err)
	noteLimit(rec, err)
	_, body := errorFor(err)
	out.Fail(body)
	return nil
}

// outcomeOf classifies a response failure for the access record.
func outcomeOf(err error) (outcome, kind string) {
	if _, ok := errors.AsType[*ViolationError](err); ok {
		return observe.OutcomeViolation, "protocol"
	}
	return observe.OutcomeIncomplete, "stream"
}

// quirks maps an upstream's configured normalizations onto the collector's.
func quirks(up *config.Upstream) wire.Quirks {
	return wire.Quirks{
		MissingIndex:    up.Quirks.Has("missing_index"),
		IndexReuse:      up.Quirks.Has("index_reuse"),
		RepeatedName:    up.Quirks.Has("repeated_name"),
		ArgumentsObject: up.Quirks.Has("arguments_object"),
	}
}

// countNormalizations records the response normalizations applied, in the
// metrics and the access record ("index_reuse=1; finish_reason=1").
func (g *Gateway) countNormalizations(rec *observe.Record, c *wire.Collector) {
	kinds := make([]string, 0, len(c.Fixes()))
	for kind, n := range c.Fixes() {
		g.metrics.Normalized(rec.Upstream, kind, n)
		kinds = append(kinds, kind+"="+strconv.Itoa(n))
	}
	sort.Strings(kinds)
	rec.Fixes = strings.Join(kinds, "; ")
}

// statusSent is the status to record when the client went away: 200 if the
// stream had started, else 499.
func statusSent(out *wire.Writer) int {
	if out.Committed() {
		return http.StatusOK
	}
	return 499
}

// errorEvent reports whether an SSE data payload is an upstream error object
// ({"error":{…}} with a non-null error, QUIRKS A38) and returns its message.
func errorEvent(data string) (string, bool) {
	if !strings.Contains(data, `"error"`) {
		return "", false
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(data), &v) != nil || len(v.Error) == 0 || string(v.Error) == "null" {
		return "", false
	}
	msg := wire.UpstreamMessage([]byte(data))
	if msg == "" {
		msg = "an unspecified error"
	}
	return msg, true
}

// whole relays a non-streamed response after checking it is one complete
// JSON document that is not an error object, and judging it.
// Like stream, it returns an error without writing only when deferFail is set.
func (g *Gateway) whole(w http.ResponseWriter, r *http.Request, rec *observe.Record, resp *http.Response, route *config.Route, up *config.Upstream, judge *policy.Judge, deferFail bool) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, up.MaxResponseBytes+1))
	switch {
	case err != nil:
		err = &IncompleteError{Upstream: rec.Upstream, Err: err}
	case int64(len(b)) > up.MaxResponseBytes:
		err = &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the response is larger than max_response_bytes")}
	case !wire.Valid(b):
		err = &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the response is not valid JSON")}
	}
	if err == nil {
		if msg, ok := errorEvent(string(b)); ok {
			err = &IncompleteError{Upstream: rec.Upstream, Message: msg, Err: errors.New("error object")}
		}
	}
	if err == nil {
		var outcome policy.Outcome
		b, outcome = g.judgeWhole(b, rec, route, up, judge)
		g.judged(rec, outcome)
		if !outcome.OK() {
			err = &ViolationError{Upstream: rec.Upstream, Msg: outcome.Msg}
		}
	}
	if err != nil {
		if deferFail && r.Context().Err() == nil {
			return err
		}
		g.fail(w, r, rec, err)
		return nil
	}
	upstream.CopyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		rec.ClientGone = true
	}
	rec.Status, rec.Outcome = http.StatusOK, observe.OutcomeOK
	return nil
}

// judgeWhole runs a chat.completion's first choice through the collector
// and the judge, the same ones streams use. With the finish_reason quirk
// on, "stop" after calls is rewritten to "tool_calls" in the body; the
// rest of the body keeps its bytes.
func (g *Gateway) judgeWhole(b []byte, rec *observe.Record, route *config.Route, up *config.Upstream, judge *policy.Judge) ([]byte, policy.Outcome) {
	c := wire.NewCollector(quirks(up))
	defer g.countNormalizations(rec, c)
	body, _ := wire.ParseObject(b) // b is valid JSON
	if raw, ok := body.Get("usage"); ok {
		if u, ok := wire.ParseUsage(raw); ok {
			addUsage(rec, u)
		}
	}
	var choices []json.RawMessage
	if raw, ok := body.Get("choices"); ok {
		choices, _ = wire.Elements(raw)
	}
	end := policy.End{Done: true}
	if len(choices) == 0 {
		return b, judge.Finish(end)
	}
	rewrite := false
	var reasoningText string
	if len(choices) > 1 && judge.SingleChoice() && up.Quirks.Has("chunks") {
		if merged, ok := mergeChoices(choices); ok {
			choices, rewrite = merged, true
			c.Fixes()["merged_choices"]++
		}
	}
	choice, err := wire.ParseObject(choices[0])
	if err != nil {
		return b, judge.Finish(policy.End{Done: true, CallsErr: &wire.ProtocolError{Index: -1, Msg: "a choice must be an object"}})
	}
	if fr, ok := choice.Get("finish_reason"); ok {
		end.FinishReason, _ = wire.String(fr)
	}
	if m, ok := choice.Get("message"); ok {
		msg, _ := wire.ParseObject(m)
		if tc, ok := msg.Get("tool_calls"); ok {
			end.CallsErr = c.AddMessage(tc)
			if end.CallsErr == nil && c.Fixes()["arguments_object"] > 0 {
				msg.Set("tool_calls", stringArguments(tc))
				choice.Set("message", msg.JSON())
				rewrite = true
			}
		}
		rs := wire.NewRestream(wire.Quirks{}, false)
		rs.ReasoningIn, rs.ReasoningOut = up.ReasoningField, route.Reasoning.Output
		if rs.MoveReasoning(&msg) {
			choice.Set("message", msg.JSON())
			rewrite = true
		}
		if content, ok := msg.Get("content"); ok {
			end.Text, _ = wire.String(content)
		}
		if up.RestoreReasoning {
			if r, ok := msg.Get(route.Reasoning.Output); ok {
				reasoningText, _ = wire.String(r)
			}
		}
	}
	if end.CallsErr == nil {
		end.Calls, end.CallsErr = c.Finish()
	}
	if up.Quirks.Has("finish_reason") && len(end.Calls) > 0 && (end.FinishReason == "stop" || end.FinishReason == "") {
		c.Fixes()["finish_reason"]++
		end.FinishReason = "tool_calls"
		choice.Set("finish_reason", json.RawMessage(`"tool_calls"`))
		rewrite = true
	}
	if rewrite {
		choices[0] = choice.JSON()
		arr, _ := json.Marshal(choices)
		body.Set("choices", arr)
		b = body.JSON()
	}
	outcome := judge.Finish(end)
	if outcome.OK() && up.RestoreReasoning {
		policy.RememberReasoning(g.store, reasoningText, end.Calls, end.Text)
	}
	return b, outcome
}

// mergeChoices folds the tool calls of every choice into the first, for a
// single-choice request answered with one choice per call (QUIRKS A28). It
// reports false, changing nothing, when a choice is not of that shape.
func mergeChoices(choices []json.RawMessage) ([]json.RawMessage, bool) {
	first, err := wire.ParseObject(choices[0])
	if err != nil {
		return choices, false
	}
	m, _ := first.Get("message")
	msg, err := wire.ParseObject(m)
	if err != nil {
		return choices, false
	}
	var all []json.RawMessage
	if tc, ok := msg.Get("tool_calls"); ok && string(tc) != "null" {
		if json.Unmarshal(tc, &all) != nil {
			return choices, false
		}
	}
	for _, rc := range choices[1:] {
		c, err := wire.ParseObject(rc)
		if err != nil {
			return choices, false
		}
		m, _ := c.Get("message")
		other, err := wire.ParseObject(m)
		if err != nil {
			return choices, false
		}
		var calls []json.RawMessage
		tc, _ := other.Get("tool_calls")
		if json.Unmarshal(tc, &calls) != nil || len(calls) == 0 {
			return choices, false
		}
		all = append(all, calls...)
	}
	arr, _ := json.Marshal(all)
	msg.Set("tool_calls", arr)
	first.Set("message", msg.JSON())
	return []json.RawMessage{first.JSON()}, true
}

// stringArguments rewrites a message's tool_calls so that arguments given
// as a JSON value other than a string become its text (QUIRKS A12); every
// other member keeps its bytes.
func stringArguments(toolCalls json.RawMessage) json.RawMessage {
	var calls []json.RawMessage
	if json.Unmarshal(toolCalls, &calls) != nil {
		return toolCalls
	}
	for k, raw := range calls {
		call, err := wire.ParseObject(raw)
		if err != nil {
			continue
		}
		fn, _ := call.Get("function")
		f, err := wire.ParseObject(fn)
		if err != nil {
			continue
		}
		if a, ok := f.Get("arguments"); ok && len(a) > 0 && a[0] != '"' && string(a) != "null" {
			s, _ := json.Marshal(string(a))
			f.Set("arguments", s)
			call.Set("function", f.JSON())
			calls[k] = call.JSON()
		}
	}
	out, _ := json.Marshal(calls)
	return out
}

// deadlineWriter is the client stream's wire.Sink. Its first write sends
// the SSE headers (with the upstream's passed-on headers); each write gets
// a fresh deadline, so a client that stops reading is cut after the idle
// timeout while a paused stream is not.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	idle    time.Duration
	header  http.Header // the upstream's response headers
	started bool
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if !d.started {
		d.started = true
		h := d.w.Header()
		upstream.CopyResponseHeaders(h, d.header)
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
	}
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.idle)) // unsupported in tests' recorders: no deadline then
	return d.w.Write(p)
}

func (d *deadlineWriter) Flush() error { return d.rc.Flush() }

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// chat serves POST /v1/chat/completions: the pipeline of DESIGN.md as one
// straight line. Only this function branches on the stages' results.
func (g *Gateway) chat(w http.ResponseWriter, r *http.Request, rec *observe.Record) {
	ctx := r.Context()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.Server.MaxBodyBytes))
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
	route, ok := g.cfg.Match(req.Model)
	if !ok {
		g.fail(w, r, rec, &RouteError{Model: req.Model})
		return
	}
	up := g.upstreams[route.Upstream]
	upCfg, _ := g.cfg.Upstream(route.Upstream)
	rec.Route, rec.Upstream, rec.Model = route.Name, route.Upstream, route.TargetModel(req.Model)

	msgs, fixes := repair.Normalize(req.Messages, steps(route, upCfg))
	var rep repair.Report
	if route.Repair != string(repair.ModeOff) {
		msgs, rep = repair.Repair(msgs)
	}
	if route.Repair == string(repair.ModeReject) && !rep.Empty() {
		g.metrics.Repaired(route.Name, "rejected", 1)
		g.fail(w, r, rec, &repair.RejectError{Report: rep})
		return
	}
	g.recordRepair(w, rec, fixes, rep)
	if len(msgs) == 0 {
		g.fail(w, r, rec, &wire.DecodeError{Param: "messages", Offset: -1,
			Msg: "has no message left once the tool messages that answer no call are dropped; send the conversation that the tool messages belong to"})
		return
	}
	if fixes.Any() || !rep.Empty() {
		req.SetMessages(msgs)
	}

	out, err := req.Encode(rec.Model)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}

	sent := time.Now()
	resp, err := up.Send(ctx, out, r.Header, req.Stream)
	if err != nil {
		rec.UpstreamDuration = time.Since(sent)
		g.fail(w, r, rec, err)
		return
	}
	defer resp.Body.Close()
	if req.Stream {
		g.stream(w, r, rec, resp, upCfg)
	} else {
		g.whole(w, r, rec, resp, upCfg)
	}
	rec.UpstreamDuration = time.Since(sent)
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
	if ue, ok := errors.AsType[*upstream.Error](err); ok && ue.Kind != upstream.KindCanceled {
		rec.ErrorKind = string(ue.Kind)
		rec.Outcome = observe.OutcomeUpstream
	}
	if _, ok := errors.AsType[*IncompleteError](err); ok {
		rec.ErrorKind = "stream"
		rec.Outcome = observe.OutcomeIncomplete
	}
	if r.Context().Err() != nil {
		rec.Status, rec.Outcome, rec.ClientGone = 499, observe.OutcomeClientGone, true
		return
	}
	status, body := errorFor(err)
	g.writeError(w, rec, status, body)
}

// stream re-streams the upstream's SSE events to the client, event by event,
// each flushed at once.
func (g *Gateway) stream(w http.ResponseWriter, r *http.Request, rec *observe.Record, resp *http.Response, up *config.Upstream) {
	ctx := r.Context()
	done := g.metrics.StreamStarted(rec.Route)
	defer done()

	sess, err := sse.Upgrade(w, r)
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	upstream.CopyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")

	rc := http.NewResponseController(w)
	dw := &deadlineWriter{s: sess, rc: rc, idle: g.cfg.Server.WriteIdleTimeout}
	stop := context.AfterFunc(ctx, func() { rc.SetWriteDeadline(time.Now()) }) // unblock a stalled write
	defer func() {
		stop()
		rc.SetWriteDeadline(time.Time{}) // the connection may serve another request
	}()
	out := wire.NewWriter(dw)

	var broken error
	complete := false
	for ev, err := range wire.Events(ctx, resp.Body, wire.ReadOptions{MaxEventSize: up.MaxEventBytes}) {
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
		if !out.Committed() {
			rec.TTFB = time.Since(rec.Start)
		}
		if err := out.Send(ev.Data); err != nil {
			rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
			rec.Error = "client write failed: " + err.Error()
			return
		}
	}
	if ctx.Err() != nil {
		rec.Status, rec.Outcome, rec.ClientGone = statusSent(out), observe.OutcomeClientGone, true
		return
	}
	if complete {
		if err := out.Done(); err != nil {
			rec.ClientGone, rec.Outcome = true, observe.OutcomeClientGone
		} else {
			rec.Outcome = observe.OutcomeOK
		}
		rec.Status = http.StatusOK
		return
	}
	if broken == nil {
		broken = &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the stream ended without data: [DONE]")}
	} else if _, ok := errors.AsType[*IncompleteError](broken); !ok {
		broken = &IncompleteError{Upstream: rec.Upstream, Err: broken}
	}
	if !out.Committed() {
		g.fail(w, r, rec, broken)
		return
	}
	rec.Status, rec.Outcome, rec.ErrorKind, rec.Error = http.StatusOK, observe.OutcomeIncomplete, "stream", broken.Error()
	_, body := errorFor(broken)
	out.Fail(body)
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
	if !bytes.Contains([]byte(data), []byte(`"error"`)) {
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
// JSON document that is not an error object.
func (g *Gateway) whole(w http.ResponseWriter, r *http.Request, rec *observe.Record, resp *http.Response, up *config.Upstream) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, up.MaxResponseBytes+1))
	switch {
	case err != nil:
		err = &IncompleteError{Upstream: rec.Upstream, Err: err}
	case int64(len(b)) > up.MaxResponseBytes:
		err = &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the response is larger than max_response_bytes")}
	case !json.Valid(b):
		err = &IncompleteError{Upstream: rec.Upstream, Err: errors.New("the response is not valid JSON")}
	}
	if err == nil {
		if msg, ok := errorEvent(string(b)); ok {
			err = &IncompleteError{Upstream: rec.Upstream, Message: msg, Err: errors.New("error object")}
		}
	}
	if err != nil {
		g.fail(w, r, rec, err)
		return
	}
	upstream.CopyResponseHeaders(w.Header(), resp.Header)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		rec.ClientGone = true
	}
	rec.Status, rec.Outcome = http.StatusOK, observe.OutcomeOK
}

// deadlineWriter gives each event write a fresh deadline, so a client that
// stops reading is cut after the idle timeout while a paused stream is not.
type deadlineWriter struct {
	s    *sse.Session
	rc   *http.ResponseController
	idle time.Duration
}

func (d *deadlineWriter) Send(m *sse.Message) error {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.idle)) // unsupported in tests' recorders: no deadline then
	return d.s.Send(m)
}

func (d *deadlineWriter) Flush() error { return d.s.Flush() }

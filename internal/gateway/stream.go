package gateway

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// relay re-streams one upstream response to the client: the upstream's
// events through the normalizer to the writer, then the judge's verdict.
// It is created per attempt and is not safe for concurrent use.
type relay struct {
	x *exchange
	t *try
	n *wire.Normalizer
	// out is the client's stream in its API's words; sse the SSE writer
	// under it, flushed before each read of the upstream.
	out clientStream
	sse *wire.Writer
	// tr translates the events of an upstream of another protocol into
	// chunks; nil for chat completions.
	tr translate.Events
	// gone: writing to the client failed.
	gone bool
}

// stream re-streams the upstream's SSE events to the client, event by
// event: nothing is held while the upstream is quiet, and events that
// arrived together leave together.
//
// A failure before anything was sent is returned, nothing written: the
// caller may try again, or another deployment or route, and the handler's
// caller writes what is left.
func (g *Gateway) stream(ctx context.Context, x *exchange, t *try) error {
	defer g.metrics.StreamStarted(x.rec.Route)()
	rc := http.NewResponseController(x.w)
	dw := &deadlineWriter{w: x.w, rc: rc, idle: g.cfg.Server.WriteIdleTimeout, header: t.resp.Header}
	stop := context.AfterFunc(x.r.Context(), func() { rc.SetWriteDeadline(time.Now()) }) // unblock a stalled write
	// The last write's deadline is left in place: it also covers what the
	// server writes once the handler returns (the end of the chunked body,
	// and a chat stream's last event with it), and net/http clears it
	// after that, before the connection serves another request.
	defer stop()
	sse := wire.NewWriter(dw)
	sse.Lazy = true // flushed before each read of the upstream: a burst leaves as one write, nothing waits
	s := &relay{x: x, t: t, n: wire.NewNormalizer(t.plan.normalizer(t.prepared)), out: sse, sse: sse}
	defer s.n.Release() // after the record has what it needs of it, below
	if tr := t.plan.upstream.translator; tr != nil {
		s.tr = tr.Stream(translate.StreamOptions{Thoughts: x.api.thoughts(), Upstream: t.plan.upstream.name, Sealer: g.sealer(x.key)})
	}
	out, ended := x.api.stream(g, x, t, sse)
	s.out = out
	sawDone, readErr, chunkErr := s.pump(ctx)
	err := g.endStream(s, sawDone, readErr, chunkErr)
	if ended != nil {
		ended(s.tr)
	}
	t.record.Fixes = fixesOf(s.n.Fixes(), s.n.FirstChunks())
	if s.tr != nil {
		t.record.Fixes = append(t.record.Fixes, kindsOf(s.tr.Kinds())...)
	}
	g.addUsage(x.rec, s.n.Usage())
	x.rec.FinishReason = s.n.FinishReason()
	if g.tracer != nil {
		x.rec.ResponseModel = s.n.Model()
	}
	return err
}

// pump moves the upstream's events to the client until the end marker,
// the end of the body, an error, or the text limit.
func (s *relay) pump(ctx context.Context) (sawDone bool, readErr, chunkErr error) {
	t := s.t
	opts := wire.ReadOptions{MaxEventSize: t.plan.upstream.maxEvent, BeforeWait: s.n} // an idle stream holds no scratch
	if s.tr == nil && s.out == clientStream(s.sse) {
		opts.Run = s // a chat stream's steady middle goes from the reader's buffer to the writer's
	}
	body := wire.FlushBeforeRead(t.resp.Body, s.sse)
	events := wire.Events(ctx, body, opts)
	if f, ok := s.tr.(translate.Framed); ok {
		events = f.Frames(ctx, body, opts.MaxEventSize) // not SSE: the protocol's own frames
	}
	for ev, err := range events {
		if err != nil {
			return false, err, nil
		}
		if ev.Done {
			return true, nil, nil
		}
		if len(ev.Data) == 0 {
			continue
		}
		data := ev.Data // valid until the next event: the normalizer copies what it keeps
		if s.tr == nil {
			if end, done, err := s.forward(data); end {
				return done, nil, err
			}
			continue
		}
		chunks, done, err := s.tr.Event(data)
		if err != nil {
			return false, nil, err
		}
		for _, c := range chunks {
			if end, done, err := s.forward(c); end {
				return done, nil, err
			}
		}
		if done {
			return true, nil, nil // the protocol's end marker (Anthropic's message_stop)
		}
	}
	// The body ended: complete when the protocol has no end marker and its
	// answer had ended (Gemini's finishReason).
	return s.tr != nil && s.tr.Ended(), nil, nil
}

// forward sends one upstream chunk through the normalizer to the client.
// end says the stream ends here: as complete (done, at the output budget),
// with a chunk's error, or because the client is gone.
func (s *relay) forward(chunk []byte) (end, done bool, chunkErr error) {
	data, send, err := s.n.Chunk(chunk)
	if err != nil {
		return true, false, err
	}
	if send && !s.send(data) {
		return true, false, nil
	}
	if !s.n.Cut() {
		return false, false, nil
	}
	// The output budget is spent: the client has exactly maxOutputChars of
	// text, and the stream ends here, as "length".
	s.x.rec.Limited = budget.MaxOutputChars.String()
	if s.n.FinishReason() == "" && !s.send(s.n.LengthChunk()) {
		return true, false, nil
	}
	return true, true, nil
}

// send writes one event to the client; false when the client is gone.
func (s *relay) send(data []byte) bool {
	if !s.out.Committed() {
		s.x.rec.TTFB = time.Since(s.x.rec.Start)
		s.release()
	}
	if err := s.out.Send(data); err != nil {
		s.lost(err)
		return false
	}
	return true
}

// Run is the relay as the event reader's [wire.Runner], for a chat
// stream from a chat upstream: the events the normalizer's template fits
// go from the reader's buffer to the client's writer as forward and send
// would take them one by one (they neither finish, cut nor fail the
// stream: those go through forward). The stream is committed by then: a
// template is made only from a chunk forward sent.
func (s *relay) Run(unread []byte, max int) int {
	if s.gone {
		return 0
	}
	n, err := s.n.Run(unread, max, s.sse)
	if err != nil {
		s.lost(err)
	}
	return n
}

// lost records that writing to the client failed.
func (s *relay) lost(err error) {
	s.gone = true
	s.x.rec.Error = "client write failed: " + err.Error()
}

// release lets go of the request once the stream is committed (no retry
// or fallback can follow): the client's decoded request and body, the
// request sent, its encoded body. A long stream of a large transcript
// then holds only what it needs to judge the answer.
func (s *relay) release() {
	s.t.judge.Detach()
	s.x.req, s.x.translations, s.x.released = nil, nil, true
	s.t.req, s.t.body = nil, nil
}

// endStream judges how the stream ended and ends it for the client: the
// held and tail chunks and [DONE], or the one error.
func (g *Gateway) endStream(s *relay, sawDone bool, readErr, chunkErr error) error {
	x, t := s.x, s.t
	if s.gone || x.r.Context().Err() != nil || errors.Is(readErr, wire.ErrClientWrite) {
		end(x.rec, ending{status: statusSent(s.out), outcome: observe.OutcomeClientGone, clientGone: true, err: readErr})
		return nil
	}
	if errors.Is(readErr, budget.ErrCallTimeout) {
		return g.failStream(s, &upstream.Error{Upstream: t.plan.upstream.name, Kind: upstream.KindTimeout, Err: readErr})
	}
	fin := wire.Finished{}
	var protocol error
	switch ie, isIncomplete := errors.AsType[*wire.IncompleteError](chunkErr); {
	case readErr != nil:
		chunkErr = &wire.IncompleteError{Upstream: t.plan.upstream.name, Err: readErr}
	case isIncomplete:
		chunkErr = t.plan.upstream.scrubbed(ie)
	case chunkErr != nil:
		protocol = chunkErr // a malformed response: a violation, whatever else
	default:
		fin = s.n.Finish(sawDone)
	}
	res := s.n.Result(protocol)
	outcome := t.judge.Finish(policy.End{Done: fin.Done, Calls: res.Calls, CallsErr: res.CallsErr, FinishReason: res.FinishReason, Text: res.Text})
	judged(x, t, outcome)
	switch {
	case outcome.OK():
		if s.tr != nil {
			res.Reasoning = string(s.tr.Carried()) // what the upstream needs back: blocks, signatures
		}
		g.remember(x, t, res)
		for _, data := range append(s.n.Flush(), fin.Tail...) {
			if !s.send(data) {
				end(x.rec, ending{status: statusSent(s.out), outcome: observe.OutcomeClientGone, clientGone: true})
				return nil
			}
		}
		e := ending{status: http.StatusOK, outcome: observe.OutcomeOK}
		if s.out.Done() != nil {
			e.outcome, e.clientGone = observe.OutcomeClientGone, true
		}
		end(x.rec, e)
		return nil
	case outcome.Kind == policy.Incomplete:
		if chunkErr == nil {
			chunkErr = &wire.IncompleteError{Upstream: t.plan.upstream.name, Err: wire.ErrNoDone}
		}
		return g.failStream(s, chunkErr)
	default:
		return g.failStream(s, &policy.ViolationError{Upstream: t.plan.upstream.name, Msg: outcome.Msg})
	}
}

// failStream ends a stream that failed: when nothing was sent yet it
// writes nothing and returns err (another attempt may follow, or the
// handler's caller writes it); after the commit point, with one error
// event and no [DONE].
func (g *Gateway) failStream(s *relay, err error) error {
	x := s.x
	if !s.out.Committed() {
		return err
	}
	// After the commit point every failure is an incomplete stream (one
	// error event), or a violation of the policy.
	f := classify(err)
	e := ending{status: http.StatusOK, outcome: observe.OutcomeIncomplete, kind: "stream", err: err}
	if f.outcome == observe.OutcomeViolation {
		e.outcome, e.kind = f.outcome, f.kind
	}
	x.rec.Limited = cmp.Or(f.limited, x.rec.Limited)
	end(x.rec, e)
	s.out.Fail(f.body)
	return nil
}

// clientStream is the client's side of a stream, in its API's words:
// chat completion chunks (a *wire.Writer), or Responses or Messages events
// (encodedOut).
type clientStream interface {
	Send(chunk []byte) error
	Committed() bool
	Done() error
	Fail(body wire.ErrorBody) error
}

// encodedOut is the client's side of a stream in another API's events
// (Responses, Messages): each chunk goes through the API's encoder, and
// its last events are flushed at once, since the response may be stored
// after them.
type encodedOut struct {
	w   *wire.Writer
	enc apiStream
}

// apiStream is a client API's stream encoder (responses.Stream,
// messages.Stream).
type apiStream interface {
	Chunk(chunk []byte) error
	Done() error
	Fail(body wire.ErrorBody) error
}

func (o encodedOut) Send(chunk []byte) error { return o.enc.Chunk(chunk) }
func (o encodedOut) Committed() bool         { return o.w.Committed() }

func (o encodedOut) Done() error {
	if err := o.enc.Done(); err != nil {
		return err
	}
	return o.w.Flush()
}

func (o encodedOut) Fail(body wire.ErrorBody) error {
	if err := o.enc.Fail(body); err != nil {
		return err
	}
	return o.w.Flush()
}

// statusSent is the status to record when the client went away: 200 if the
// stream had started, else 499.
func statusSent(out clientStream) int {
	if out.Committed() {
		return http.StatusOK
	}
	return 499
}

// deadlineWriter is the client stream's wire.Sink. Its first write sends
// the SSE headers (with the upstream's passed-on headers); each write has
// a deadline the idle timeout ahead, so a client that stops reading is cut
// after it while a paused stream is not. The deadline is moved only when
// it has fallen behind by a sixteenth of the timeout (a write is then cut
// after 15/16 of it at the earliest): a burst of writes sets it once, not
// once each, which costs a lock and a timer change in the runtime.
type deadlineWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	idle    time.Duration
	header  http.Header // the upstream's response headers
	started bool
	armed   time.Time // when the deadline was last set
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
	if now := time.Now(); now.Sub(d.armed) >= d.idle/16 {
		_ = d.rc.SetWriteDeadline(now.Add(d.idle)) // unsupported in tests' recorders: no deadline then
		d.armed = now
	}
	return d.w.Write(p)
}

func (d *deadlineWriter) Flush() error { return d.rc.Flush() }

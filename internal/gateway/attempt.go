package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/upstream"
)

// try is one upstream attempt of a prepared request: its response and
// what became of it.
type try struct {
	*prepared
	resp   *http.Response
	record *observe.Attempt
}

// attempts sends a prepared request until it is answered: before anything
// reached the client, a failed attempt — no connection, a 429 or 5xx, a
// response that broke off or violates the policy — may be followed by
// another, route.retries times, after a backoff (or the upstream's
// Retry-After). After the first byte, never. It returns the last
// failure, unwritten when nothing reached the client.
func (g *Gateway) attempts(x *exchange, pr *prepared) error {
	ctx := x.r.Context()
	if pr.limits.CallTimeout != budget.Unlimited {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, pr.limits.CallTimeout, budget.ErrCallTimeout)
		defer cancel()
	}
	return g.retrying(ctx, x, pr.plan, func() error {
		return g.attempt(ctx, x, &try{prepared: pr})
	})
}

// retrying is the one loop of attempts on a deployment, for every
// endpoint: it calls once until it succeeds, or fails with an error
// classify says is not worth retrying, or the route's retries are spent,
// or the backoff does not fit. It returns the last failure.
func (g *Gateway) retrying(ctx context.Context, x *exchange, p *plan, once func() error) error {
	for n := 0; ; n++ {
		err := once()
		if err == nil || n >= p.retries || x.released {
			return err
		}
		if f := classify(err); !f.retry || !g.backoff(ctx, p, n, f.retryAfter) {
			return err
		}
		g.log.Debug("retrying the upstream", zap.String("request_id", x.rec.RequestID), zap.Int("attempt", n+1), zap.Error(err))
	}
}

// attempt sends the request once and relays the answer: nil when it was
// answered, or failed with what was written already.
func (g *Gateway) attempt(ctx context.Context, x *exchange, t *try) error {
	p := t.plan
	p.upstream.inFlight.Inc()
	defer p.upstream.inFlight.Dec()
	a := observe.Attempt{Route: p.name, Upstream: p.upstream.name, Provider: p.upstream.protocol.String(), Model: x.rec.Model}
	ctx, span := g.startAttempt(ctx, x, &a)
	sent := time.Now()
	resp, reconnected, err := p.upstream.client.Send(ctx, upstream.Call{Body: t.body, Header: x.r.Header, Stream: t.req.Stream, Path: t.path,
		Model: p.targetModel(x.req.Model), Extra: x.api.upstreamHeader(x, p.upstream)})
	t.record = x.noteAttempt(a, reconnected)
	defer func() {
		x.rec.UpstreamDuration += time.Since(sent)
		t.record.EndClientSpan(span)
	}()
	if err != nil {
		t.record.Outcome = classify(err).attempt
		return err
	}
	t.resp = resp
	idle := watchIdle(resp, p.upstream.readIdle)
	if t.req.Stream {
		err = g.stream(ctx, x, t)
	} else {
		err = g.whole(x, t)
	}
	idle.stop()
	upstream.Finish(idle.ReadCloser, finishWait) // the body under the idle watch
	switch {
	case err != nil:
		t.record.Outcome = classify(err).attempt
	case x.rec.ClientGone:
		t.record.Outcome = observe.AttemptCanceled
	default:
		t.record.Outcome = outcomeOf(x.rec)
	}
	return err
}

// finishWait bounds the wait for the rest of an upstream body once its
// answer has been relayed: the end of its chunked encoding, which lets its
// connection be used again.
const finishWait = 50 * time.Millisecond

// noteAttempt appends an upstream attempt to the record, preceded by a
// "reconnected" one when its request was resent on a fresh connection,
// and returns it, for its outcome.
func (x *exchange) noteAttempt(a observe.Attempt, reconnected bool) *observe.Attempt {
	if reconnected {
		r := a
		r.Outcome = observe.AttemptReconnected
		x.rec.Attempts = append(x.rec.Attempts, r)
	}
	x.rec.Attempts = append(x.rec.Attempts, a)
	return &x.rec.Attempts[len(x.rec.Attempts)-1]
}

// backoff waits before the next attempt: the route's retry_backoff doubled
// at each attempt (with ±20% jitter, at most 8×), or the upstream's
// Retry-After when it asks for longer. It reports false, having waited for
// nothing, when the wait would pass retry_max_wait or the call's deadline,
// and when ctx ends while waiting.
func (g *Gateway) backoff(ctx context.Context, p *plan, attempt int, retryAfter time.Duration) bool {
	wait := p.backoff.base << min(attempt, 3)
	wait += time.Duration((g.clock.rand()*0.4 - 0.2) * float64(wait))
	wait = max(wait, retryAfter)
	return g.wait(ctx, p, wait)
}

// wait waits d, when that is within the route's retry_max_wait and the
// request's deadline, reporting whether it did (false, having waited for
// nothing, or when ctx ended while waiting).
func (g *Gateway) wait(ctx context.Context, p *plan, d time.Duration) bool {
	if d > p.backoff.max {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(g.clock.now()) < d {
		return false
	}
	return g.clock.sleep(ctx, d)
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

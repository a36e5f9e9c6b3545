package gateway

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/policy"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/upstream"
	"github.com/toolgate/toolgate/internal/wire"
)

// whole relays a non-streamed response: read within max_response_bytes,
// normalized by the same normalizer as streams, judged, then written.
// Like stream, it returns a failure without writing it.
func (g *Gateway) whole(x *exchange, t *try) error {
	up := t.plan.upstream
	n := wire.NewNormalizer(t.plan.normalizer(t.prepared))
	defer n.Release() // Whole answers with the upstream's body or a new slice, never n's memory
	b, err := io.ReadAll(io.LimitReader(t.resp.Body, up.maxResponse+1))
	var answer translate.Answer
	sent := b // the upstream's own answer, for a client of its protocol
	switch {
	case err != nil:
		err = &wire.IncompleteError{Upstream: up.name, Err: err}
	case int64(len(b)) > up.maxResponse:
		err = &wire.IncompleteError{Upstream: up.name, Err: errors.New("the response is larger than max_response_bytes")}
	case up.translator != nil:
		if answer, err = up.translator.Whole(b, up.name); err == nil {
			b, err = n.Whole(answer.Chat)
		}
	default:
		b, err = n.Whole(b)
	}
	if ie, ok := errors.AsType[*wire.IncompleteError](err); ok {
		err = up.scrubbed(ie)
	}
	res := n.Result(nil)
	t.record.Fixes = fixesOf(res.Fixes, wire.FixChunks{}) // one answer: no chunk to name
	t.record.Fixes = append(t.record.Fixes, kindsOf(answer.Kinds)...)
	if up.translator != nil {
		res.Reasoning = string(answer.Carried) // what the upstream needs back: blocks, signatures (or nothing)
	}
	g.addUsage(x.rec, res.Usage)
	x.rec.FinishReason = res.FinishReason
	if g.tracer != nil {
		x.rec.ResponseModel = n.Model()
	}
	done := err == nil
	outcome := t.judge.Finish(policy.End{Done: done, Calls: res.Calls, CallsErr: res.CallsErr, FinishReason: res.FinishReason, Text: res.Text})
	judged(x, t, outcome)
	if err == nil && !outcome.OK() {
		err = &policy.ViolationError{Upstream: up.name, Msg: outcome.Msg}
	}
	if err != nil {
		return err // written by the handler's caller, unless another attempt follows
	}
	g.remember(x, t, res)
	b, store, err := x.api.whole(g, x, t, judgedAnswer{chat: b, sent: sent, answer: answer})
	if err != nil {
		return err
	}
	defer store() // once the client has the answer
	h := x.w.Header()
	upstream.CopyResponseHeaders(h, t.resp.Header)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	x.w.WriteHeader(http.StatusOK)
	_, err = x.w.Write(b)
	end(x.rec, ending{status: http.StatusOK, outcome: observe.OutcomeOK, clientGone: err != nil})
	return nil
}

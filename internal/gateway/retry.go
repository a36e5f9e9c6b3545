package gateway

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/budget"
	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/upstream"
)

// attemptOutcome names one upstream attempt's result, for the access log
// and toolgate_upstream_attempts_total.
func attemptOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	if ue, ok := errors.AsType[*upstream.Error](err); ok {
		switch {
		case ue.Kind == upstream.KindStatus && ue.Status == http.StatusTooManyRequests:
			return "status_429"
		case ue.Kind == upstream.KindStatus && ue.Status >= 500:
			return "status_5xx"
		case ue.Kind == upstream.KindStatus:
			return "status_4xx"
		default:
			return string(ue.Kind) // connect, timeout, canceled
		}
	}
	if _, ok := errors.AsType[*ViolationError](err); ok {
		return "violation"
	}
	return "incomplete"
}

// recordedOutcome names the outcome of an attempt that ended the request
// (stream and whole write their own failures).
func recordedOutcome(rec *observe.Record) string {
	switch rec.Outcome {
	case observe.OutcomeOK:
		return "ok"
	case observe.OutcomeViolation:
		return "violation"
	case observe.OutcomeClientGone:
		return "canceled"
	case observe.OutcomeUpstream:
		if rec.ErrorKind != "" {
			return rec.ErrorKind
		}
	}
	return "incomplete"
}

// fallbackable reports whether a failure may be tried on a fallback
// route: the upstream's doing (no connection, a timeout, a 429 or 5xx, a
// broken or refused response), not the request's (a 4xx, a budget, a bad
// request) nor the client's (gone).
func fallbackable(err error) bool {
	if ue, ok := errors.AsType[*upstream.Error](err); ok {
		switch ue.Kind {
		case upstream.KindConnect, upstream.KindTimeout:
			return !errors.Is(err, budget.ErrCallTimeout) // the call's own budget is spent
		case upstream.KindStatus:
			return ue.Status == http.StatusTooManyRequests || ue.Status >= 500 || ue.Status == http.StatusUnauthorized || ue.Status == http.StatusForbidden
		}
		return false
	}
	_, incomplete := errors.AsType[*IncompleteError](err)
	_, violation := errors.AsType[*ViolationError](err)
	return incomplete || violation
}

// retryable reports whether a failed call may be tried again: no
// connection, a 429 or a 5xx. A timeout is not (the call's deadline is
// spent, or the upstream is too slow to wait for twice), nor is a 4xx.
func retryable(err error) bool {
	ue, ok := errors.AsType[*upstream.Error](err)
	if !ok {
		return false
	}
	return ue.Kind == upstream.KindConnect ||
		ue.Kind == upstream.KindStatus && (ue.Status == http.StatusTooManyRequests || ue.Status >= 500)
}

// backoff waits before the next attempt: the route's retry_backoff doubled
// at each attempt (with ±20% jitter, at most 8×), or the upstream's
// Retry-After when it asks for longer. It reports false, having waited
// for nothing, when the wait would pass route.retry_max_wait or the
// call's deadline, and when ctx ends while waiting.
func (g *Gateway) backoff(ctx context.Context, rec *observe.Record, route *config.Route, attempt int, err error) bool {
	wait := route.RetryBackoff << min(attempt, 3)
	wait += time.Duration((rand.Float64()*0.4 - 0.2) * float64(wait))
	if ue, ok := errors.AsType[*upstream.Error](err); ok && ue.RetryAfter > wait {
		wait = ue.RetryAfter
	}
	if wait > route.RetryMaxWait {
		return false
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// attempted records one attempt's outcome.
func (g *Gateway) attempted(rec *observe.Record, outcome string) {
	g.metrics.Attempt(rec.Route, rec.Upstream, outcome)
	if rec.AttemptLog != "" {
		rec.AttemptLog += ","
	}
	rec.AttemptLog += outcome
}

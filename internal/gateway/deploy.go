package gateway

import (
	"hash/fnv"
	"math"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/observe"
)

// deployment is one upstream of a route with several: the route's plan
// resolved onto that upstream, its share, and its health.
type deployment struct {
	plan   *plan
	weight int
	health *health
}

// health is an upstream's cooldown, shared by every route it serves: a
// deployment that answered 429 or 5xx, or could not be reached, is left
// out until then.
type health struct {
	until atomic.Int64 // unix nanoseconds; 0: healthy
}

// cool leaves the deployment out until at least now+d.
func (h *health) cool(now time.Time, d time.Duration) {
	t := now.Add(d).UnixNano()
	for {
		cur := h.until.Load()
		if cur >= t || h.until.CompareAndSwap(cur, t) {
			return
		}
	}
}

// CoolingError is a request none of whose route's deployments can take it
// now: every one is cooling down for longer than the route waits.
type CoolingError struct {
	Route      string
	RetryAfter time.Duration
}

func (e *CoolingError) Error() string {
	return "every deployment of route " + e.Route + " is cooling down"
}

// sender sends a request to one deployment's plan, with its retries:
// route for chat, Responses and Messages requests, a forwarding for the
// rest of /v1. A failure before anything reached the client is returned
// unwritten, for the next deployment or route.
type sender func(x *exchange, p *plan) error

// deploy serves the request on one route, the one loop over deployments
// of every endpoint. A route with several deployments tries those that
// take the request (takes; nil: all) one after the other, chosen by pick,
// before anything reached the client: a deployment that fails with 429,
// 5xx or no connection cools down, and on a failure classify says another
// may serve (fallback) the next one is tried at once. The last failure is
// returned, for the next route or the handler.
func (g *Gateway) deploy(x *exchange, p *plan, send sender, takes func(*plan) bool) error {
	if len(p.deployments) < 2 {
		return send(x, p)
	}
	tried := make([]bool, len(p.deployments))
	left := len(tried)
	for i := range p.deployments {
		if takes != nil && !takes(p.deployments[i].plan) {
			tried[i], left = true, left-1
		}
	}
	var last error
	for left > 0 {
		i, wait := g.pick(x, p, tried)
		if wait > 0 && !g.wait(x.r.Context(), p, wait) {
			if last != nil {
				return last
			}
			return &CoolingError{Route: p.name, RetryAfter: wait}
		}
		tried[i], left = true, left-1
		d := &p.deployments[i]
		err := send(x, d.plan)
		if err == nil {
			return nil
		}
		last = moveOn(last, err)
		f := classify(err)
		g.coolDown(x, p, d, f)
		if x.released || !f.fallback || x.r.Context().Err() != nil {
			return last
		}
	}
	return last
}

// pick chooses the next deployment among those not tried: the healthy
// ones by weight (by the session, when the route remembers reasoning, so
// that a conversation stays where its state is), else a healthy one of
// weight 0, else the one whose cooldown ends soonest, with the time left.
func (g *Gateway) pick(x *exchange, p *plan, tried []bool) (int, time.Duration) {
	now := g.clock.now().UnixNano()
	total, zero, soonest := 0, -1, -1
	for i := range p.deployments {
		d := &p.deployments[i]
		switch {
		case tried[i]:
		case d.health.until.Load() > now:
			if soonest < 0 || d.health.until.Load() < p.deployments[soonest].health.until.Load() {
				soonest = i
			}
		case d.weight == 0:
			if zero < 0 {
				zero = i
			}
		default:
			total += d.weight
		}
	}
	healthy := func(i int) bool {
		return !tried[i] && p.deployments[i].weight > 0 && p.deployments[i].health.until.Load() <= now
	}
	switch {
	case total > 0 && p.sticky:
		if s := g.session(x); s != "" {
			return rendezvous(p, s, healthy), 0
		}
		fallthrough
	case total > 0:
		r := int(g.clock.rand() * float64(total))
		for i := range p.deployments {
			if healthy(i) {
				if r < p.deployments[i].weight {
					return i, 0
				}
				r -= p.deployments[i].weight
			}
		}
		for i := len(p.deployments) - 1; ; i-- { // rand() of 1.0: the last healthy one
			if healthy(i) {
				return i, 0
			}
		}
	case zero >= 0:
		return zero, 0
	}
	return soonest, max(time.Duration(p.deployments[soonest].health.until.Load()-now), 1)
}

// rendezvous is the weighted rendezvous (highest random weight) choice of
// a deployment for a session: the same one while it is healthy, and only
// the sessions of a deployment that leaves move.
func rendezvous(p *plan, session string, healthy func(int) bool) int {
	best, bestScore := -1, math.Inf(1)
	for i := range p.deployments {
		if !healthy(i) {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(session))
		h.Write([]byte{0})
		h.Write([]byte(p.deployments[i].plan.upstream.name))
		u := (float64(h.Sum64()>>11) + 0.5) / (1 << 53) // in (0, 1)
		if score := -math.Log(u) / float64(p.deployments[i].weight); score < bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// coolDown puts a deployment whose attempt failed with 429, 5xx or no
// connection in cooldown (the upstream's Retry-After, else the route's
// cooldown), and notes it on the attempt's record.
func (g *Gateway) coolDown(x *exchange, p *plan, d *deployment, f failure) {
	if f.cool == "" {
		return
	}
	dur := p.cooldown
	if f.retryAfter > 0 {
		dur = f.retryAfter
	}
	d.health.cool(g.clock.now(), dur)
	for i := len(x.rec.Attempts) - 1; i >= 0; i-- {
		if a := &x.rec.Attempts[i]; a.Upstream == d.plan.upstream.name && a.Outcome != observe.AttemptReconnected {
			a.Cooldown = f.cool
			break
		}
	}
}

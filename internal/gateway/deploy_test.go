package gateway_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// deployments starts one simulator per options, named d0, d1, …, and
// returns them with the upstreams: block naming them.
func deployments(t *testing.T, opts ...sim.Options) ([]*sim.Sim, string) {
	var sims []*sim.Sim
	var ups []string
	for i, o := range opts {
		s := sim.New(o)
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		sims = append(sims, s)
		ups = append(ups, fmt.Sprintf(`{name: d%d, url: "%s/v1"}`, i, srv.URL))
	}
	return sims, "upstreams: [" + strings.Join(ups, ", ") + "]\n"
}

// Four deployments behind one route: two healthy (weights 3 and 1), one
// failing with 500 and one rate-limited (429, Retry-After: 60). Over
// 10,000 requests none fails: the failing ones cool down at their first
// failure and their requests move to the healthy ones before a byte
// reached the client; the healthy ones share the traffic 3:1 within two
// points. Cooldowns, attempts and in-flight calls are counted per
// deployment.
func TestDeploymentsSpread(t *testing.T) {
	sims, ups := deployments(t, sim.Options{Fast: true}, sim.Options{Fast: true},
		sim.Options{Status: 500}, sim.Options{Status: 429, RetryAfter: time.Minute})
	e := gatewaytest.Start(t, "", ups+`
routes:
  - model: "*"
    cooldown: 1m
    upstreams: [{name: d0, weight: 3}, {name: d1, weight: 1}, {name: d2, weight: 2}, {name: d3, weight: 2}]
`)
	const n, workers = 10000, 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				resp := e.Post(t, fmt.Sprintf(`{"model":"sim-text","stream":%v,"messages":[{"role":"user","content":"x"}]}`, i%2 == 0))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[200] != n {
		t.Fatalf("statuses %v: a request failed while deployments were healthy", codes)
	}
	a, b, f, l := sims[0].Requests(), sims[1].Requests(), sims[2].Requests(), sims[3].Requests()
	share := float64(a) / float64(a+b)
	t.Logf("d0 %d, d1 %d (share %.4f, want 0.75), failing %d, rate-limited %d", a, b, share, f, l)
	if math.Abs(share-0.75) > 0.02 || a+b != n {
		t.Errorf("healthy deployments served %d and %d: share %.4f, want 0.75±0.02", a, b, share)
	}
	if f < 1 || f > workers || l < 1 || l > workers {
		t.Errorf("the failing deployment got %d requests and the rate-limited one %d: each should cool down at its first failure", f, l)
	}
	for _, c := range []struct {
		up, reason string
		got        int64
	}{{"d2", "status_5xx", f}, {"d3", "rate_limited", l}} {
		if v := e.Metric(t, "toolgate_deployment_cooldowns_total", map[string]string{"upstream": c.up, "reason": c.reason}); v != float64(c.got) {
			t.Errorf("cooldowns of %s: %v, want %d", c.up, v, c.got)
		}
	}
	if v := e.Metric(t, "toolgate_upstream_attempts_total", map[string]string{"upstream": "d0", "outcome": "ok"}); v != float64(a) {
		t.Errorf("attempts of d0: %v, want %d", v, a)
	}
	if v := e.Metric(t, "toolgate_upstream_attempts_total", map[string]string{"upstream": "d3", "outcome": "status_429"}); v != float64(l) {
		t.Errorf("429 attempts of d3: %v, want %d", v, l)
	}
	for _, up := range []string{"d0", "d1", "d2", "d3"} {
		if v := e.Metric(t, "toolgate_upstream_in_flight", map[string]string{"upstream": up}); v != 0 {
			t.Errorf("in flight on %s after the run: %v", up, v)
		}
	}
}

// Every deployment cooling down: the request waits for the soonest when
// it is within the route's retry_max_wait, else it is refused with 503
// and Retry-After (and a fallback route is still tried).
func TestDeploymentsAllCooling(t *testing.T) {
	_, ups := deployments(t, sim.Options{Status: 503, RetryAfter: 30 * time.Second}, sim.Options{Status: 429, RetryAfter: 20 * time.Second}, sim.Options{Fast: true})
	// The gateway's clock stands still: the cooldowns left are exactly
	// the Retry-After the deployments asked for, however long the test
	// takes.
	now := time.Unix(1_700_000_000, 0)
	e := gatewaytest.Start(t, "", ups+`
routes:
  - {name: pool, model: "pool", upstream_model: "sim-text", upstreams: [{name: d0}, {name: d1}], retry_max_wait: 1s}
  - {name: backed, model: "backed", upstream_model: "sim-text", upstreams: [{name: d0}, {name: d1}], fallbacks: [spare]}
  - {name: spare, model: "spare", upstream: d2}
`, gatewaytest.Options{Gateway: func(o *gateway.Options) { o.Now = func() time.Time { return now } }})
	post := func(model string) (int, string, string) {
		resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"x"}]}`)
		return resp.StatusCode, resp.Header.Get("Retry-After"), body
	}
	// Both fail in turn (the last failure is the client's answer) and cool down.
	if code, _, body := post("pool"); code != 503 && code != 429 {
		t.Fatalf("both failing: %d %s", code, body)
	}
	code, ra, body := post("pool")
	if code != 503 || ra != "20" || !strings.Contains(body, `"code":"deployments_cooling_down"`) {
		t.Fatalf("all cooling down: %d Retry-After %q %s", code, ra, body)
	}
	if code, ra, body := post("backed"); code != 200 || ra != "" {
		t.Fatalf("all cooling down, with a fallback route: %d Retry-After %q %s", code, ra, body)
	}
}

// A route that remembers reasoning keeps each session on one deployment
// (the one holding its state) while it is healthy; sessions spread over
// the deployments by weight.
func TestDeploymentsSticky(t *testing.T) {
	sims, ups := deployments(t, sim.Options{}, sim.Options{}, sim.Options{})
	ups = strings.ReplaceAll(ups, `/v1"}`, `/v1", restore_reasoning: true}`)
	e := gatewaytest.Start(t, "", ups+`
routes: [{model: "*", upstreams: [{name: d0}, {name: d1}, {name: d2}]}]
`)
	count := func() []int64 { return []int64{sims[0].Requests(), sims[1].Requests(), sims[2].Requests()} }
	used := map[int]int{}
	for s := range 60 {
		where := -1
		for turn := range 4 {
			before := count()
			resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, "X-Session-Id", fmt.Sprintf("session-%d", s))
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			after := count()
			for i := range after {
				if after[i] != before[i] {
					if where >= 0 && where != i {
						t.Fatalf("session %d moved from d%d to d%d at turn %d", s, where, i, turn+1)
					}
					where = i
				}
			}
		}
		used[where]++
	}
	if len(used) != 3 || used[0] < 8 || used[1] < 8 || used[2] < 8 {
		t.Errorf("sessions per deployment: %v", used)
	}
}

// Every deployment cooling down for less than the route's retry_max_wait:
// the request waits for the soonest and is served by it.
func TestDeploymentsWaitForSoonest(t *testing.T) {
	a, _ := flaky(t, 1, 500, "")
	b, _ := flaky(t, 1, 500, "")
	var waited []time.Duration
	var mu sync.Mutex
	opts := gatewaytest.Options{Gateway: func(o *gateway.Options) {
		o.Sleep = func(ctx context.Context, d time.Duration) bool {
			mu.Lock()
			waited = append(waited, d)
			mu.Unlock()
			return ctx.Err() == nil
		}
	}}
	e := gatewaytest.Start(t, "", `
upstreams: [{name: a, url: "`+a.URL+`"}, {name: b, url: "`+b.URL+`"}]
routes: [{model: "*", upstreams: [{name: a}, {name: b}], cooldown: 500ms, retry_max_wait: 2s}]
`, opts)
	post := func() int {
		resp, _ := e.Do(t, "POST", "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		return resp.StatusCode
	}
	if code := post(); code != 502 {
		t.Fatalf("both deployments failing once: %d", code)
	}
	if code := post(); code != 200 {
		t.Fatalf("after waiting for the soonest: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waited) != 1 || waited[0] <= 0 || waited[0] > 500*time.Millisecond {
		t.Errorf("waits %v, want one of at most the cooldown", waited)
	}
}

// The rest of /v1 on a route with several deployments: embeddings are
// spread over them and move off one that fails (500 here) before a byte
// reached the client, which then cools down; an anthropic deployment of
// the route is never sent an OpenAI path.
func TestDeploymentsPassthrough(t *testing.T) {
	var failed atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed.Add(1)
		w.WriteHeader(500)
	}))
	t.Cleanup(down.Close)
	sims, ups := deployments(t, sim.Options{}, sim.Options{})
	ups = strings.Replace(ups, "]\n", `, {name: down, url: "`+down.URL+`/v1"}, {name: claude, url: "`+down.URL+`/v1", protocol: anthropic}]`+"\n", 1)
	e := gatewaytest.Start(t, "", ups+`
routes: [{model: "*", upstreams: [{name: d0}, {name: down, weight: 5}, {name: claude, weight: 5}, {name: d1}]}]
`)
	for i := range 40 {
		r, body := e.Do(t, "POST", "/embeddings", `{"model":"text-embedding-3-small","input":"hello"}`)
		if r.StatusCode != 200 || !strings.Contains(body, `"embedding"`) {
			t.Fatalf("embeddings %d: %d %s", i+1, r.StatusCode, body)
		}
	}
	if f := failed.Load(); f != 1 {
		t.Errorf("the failing deployment got %d requests (the anthropic one none): it should cool down at its first failure", f)
	}
	if sims[0].Requests() == 0 || sims[1].Requests() == 0 {
		t.Errorf("requests per healthy deployment: %d, %d", sims[0].Requests(), sims[1].Requests())
	}
}

// toolgate_upstream_in_flight counts a deployment's calls while they run:
// 1 during a slow stream, 0 once it ended.
func TestDeploymentInFlight(t *testing.T) {
	up := gatewaytest.StartHeld(t)
	_, ups := deployments(t, sim.Options{Status: 500})
	e := gatewaytest.Start(t, "", strings.Replace(ups, "]\n", `, {name: held, url: "`+up.URL+`/v1"}]`+"\n", 1)+`
routes: [{model: "*", upstreams: [{name: held}, {name: d0, weight: 0}]}]
`)
	resp := e.Post(t, `{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	_, _ = resp.Body.Read(make([]byte, 1)) // the stream has started, and is held
	if v := e.Metric(t, "toolgate_upstream_in_flight", map[string]string{"upstream": "held"}); v != 1 {
		t.Errorf("in flight during the stream: %v", v)
	}
	up.Release()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if v := e.Metric(t, "toolgate_upstream_in_flight", map[string]string{"upstream": "held"}); v != 0 {
		t.Errorf("in flight after the stream: %v", v)
	}
}

package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/testredis"
)

// twoGateways starts a simulator and two gateway replicas in front of it,
// both configured with yaml (REDIS_URL replaced by the test Redis).
func twoGateways(t *testing.T, srv *testredis.Server, yaml string) (a, b *gatewaytest.Env, s *sim.Sim) {
	t.Helper()
	s = sim.New(sim.Options{})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	yaml = strings.ReplaceAll(yaml, "REDIS_URL", srv.URL())
	return gatewaytest.Start(t, up.URL, yaml), gatewaytest.Start(t, up.URL, yaml), s
}

// Two replicas sharing one Redis enforce one maxCalls per session and one
// rate limit per key between them, and every counter they write expires.
func TestRedisSharedLimits(t *testing.T) {
	srv := testredis.Start(t)
	a, b, s := twoGateways(t, srv, `
state: {store: redis, redis_url: "REDIS_URL", timeout: 10s}
keys: [{name: team, sha256: `+gatewaytest.KeyHash("sk-team")+`, rate_limit: {requests_per_minute: 4}}]
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, budget: {max_calls: 3}}]
`)
	call := func(e *gatewaytest.Env, session string) (int, string) {
		hdr := []string{"Authorization", "Bearer sk-team"}
		if session != "" {
			hdr = append(hdr, "X-Session-Id", session)
		}
		resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, hdr...)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	// maxCalls 3 for session s1, across both replicas.
	for i, e := range []*gatewaytest.Env{a, b, a} {
		if code, body := call(e, "s1"); code != 200 {
			t.Fatalf("call %d of s1: %d %s", i+1, code, body)
		}
	}
	before := s.Requests()
	if code, body := call(b, "s1"); code != 429 || !strings.Contains(body, "max_calls_exceeded") || s.Requests() != before {
		t.Fatalf("fourth call of s1 on the other replica: %d %s", code, body)
	}
	// The refused call took nothing from the rate limit (3 of 4 used): one
	// more request passes, the next is refused, whichever replica serves it.
	if code, body := call(b, ""); code != 200 {
		t.Fatalf("fourth request of the key: %d %s", code, body)
	}
	if code, body := call(a, ""); code != 429 || !strings.Contains(body, "rate_limit_exceeded") {
		t.Fatalf("fifth request of the key: %d %s", code, body)
	}

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), "toolgate:*").Result()
	if err != nil || len(keys) < 2 {
		t.Fatalf("keys in Redis: %v %v", keys, err)
	}
	for _, k := range keys {
		if ttl := rdb.PTTL(context.Background(), k).Val(); ttl <= 0 {
			t.Errorf("key %s has no expiry (%v)", k, ttl)
		}
	}
}

// Redis stops mid-test: a fail_open replica serves on (logged and
// counted), a fail_closed one answers 503 in OpenAI's shape; once Redis is
// back, both count again.
func TestRedisUnavailable(t *testing.T) {
	srv := testredis.Start(t)
	cfg := func(mode string) string {
		return `
state: {store: redis, redis_url: "REDIS_URL", timeout: 10s, on_error: ` + mode + `}
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, budget: {max_calls: 1}}]
`
	}
	open, _, _ := twoGateways(t, srv, cfg("fail_open"))
	closed, _, _ := twoGateways(t, srv, cfg("fail_closed"))
	call := func(e *gatewaytest.Env, session string) (int, string) {
		resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, "X-Session-Id", session)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if code, _ := call(closed, "before"); code != 200 {
		t.Fatalf("with Redis up: %d", code)
	}

	srv.Stop()
	for i := range 2 { // more calls than max_calls: nothing is counted
		if code, body := call(open, "s"); code != 200 {
			t.Errorf("fail_open call %d: %d %s", i+1, code, body)
		}
	}
	code, body := call(closed, "s")
	if code != 503 || !strings.Contains(body, `"code":"state_unavailable"`) {
		t.Errorf("fail_closed: %d %s", code, body)
	}
	if n := open.Metric(t, "toolgate_state_errors_total", map[string]string{"operation": "admit", "mode": "fail_open"}); n != 2 {
		t.Errorf("fail_open state errors counted: %v", n)
	}
	if n := closed.Metric(t, "toolgate_budget_rejections_total", map[string]string{"reason": "state_unavailable"}); n != 1 {
		t.Errorf("fail_closed rejections counted: %v", n)
	}
	if open.Logs.FilterMessage("state store unavailable").Len() != 2 {
		t.Errorf("fail_open warnings logged: %d", open.Logs.FilterMessage("state store unavailable").Len())
	}

	srv.Restart() // empty: counting starts again
	if code, body := call(closed, "s"); code != 200 {
		t.Fatalf("fail_closed with Redis back: %d %s", code, body)
	}
	if code, _ := call(open, "s"); code != 429 {
		t.Errorf("the other replica does not see the shared count once Redis is back: %d", code)
	}
}

// reasoningOnRedis is a gateway whose state is in Redis, in front of an
// upstream whose reasoning is restored (DeepSeek's thinking mode).
const reasoningOnRedis = `
state: {store: redis, redis_url: "REDIS_URL", timeout: 10s}
upstreams: [{name: ds, url: "UPSTREAM_URL/v1", restore_reasoning: true}]
routes: [{model: "*", upstream: ds}]
`

// Reasoning remembered by one replica is restored by the other: a
// DeepSeek-style tool conversation whose turns alternate between them.
func TestRedisSharedReasoning(t *testing.T) {
	srv := testredis.Start(t)
	a, b, s := twoGateways(t, srv, reasoningOnRedis)
	msgs := gatewaytest.UserMsg("Weather in Paris, twice please.")
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})}
	for turn, e := range []*gatewaytest.Env{a, b, a} {
		stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "sim-deepseek", Messages: msgs, Tools: tools})
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("turn %d: %v\nlast request: %s", turn+1, err, s.LastRequest())
		}
		m := acc.Choices[0].Message
		if len(m.ToolCalls) == 0 {
			if turn != 2 {
				t.Fatalf("turn %d: no call", turn+1)
			}
			break
		}
		msgs = append(msgs, m.ToParam(), openai.ToolMessage(fmt.Sprint("sunny ", turn), m.ToolCalls[0].ID))
	}
	if !strings.Contains(string(s.LastRequest()), `"reasoning_content":"Thinking, step 2."`) {
		t.Errorf("reasoning not restored across replicas: %s", s.LastRequest())
	}
}

// An Anthropic upstream's thinking blocks are shared through Redis like
// any remembered reasoning: a tool conversation that alternates replicas
// gets its signed thinking blocks back on every replay.
func TestRedisSharedThinkingBlocks(t *testing.T) {
	srv := testredis.Start(t)
	a, b, s := twoGateways(t, srv, `
state: {store: redis, redis_url: "REDIS_URL", timeout: 10s}
upstreams: [{name: claude, protocol: anthropic, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: claude, reasoning: {format: thinking-budget, level: low}}]
`)
	msgs := gatewaytest.UserMsg("Weather in Paris, twice please.")
	for turn, e := range []*gatewaytest.Env{a, b, a} {
		r := accumulate(t, e, openai.ChatCompletionNewParams{Model: "claude-toolloop", Messages: msgs, Tools: weatherTool})
		if r.err != nil {
			t.Fatalf("turn %d: %v\nlast request: %s", turn+1, r.err, s.LastRequest())
		}
		if len(r.msg.ToolCalls) == 0 {
			if turn != 2 {
				t.Fatalf("turn %d: no call", turn+1)
			}
			break
		}
		msgs = append(msgs, r.msg.ToParam(), openai.ToolMessage("sunny", r.msg.ToolCalls[0].ID))
	}
	if strings.Count(string(s.LastRequest()), `"type":"thinking"`) != 2 {
		t.Errorf("thinking blocks not restored across replicas: %s", s.LastRequest())
	}
}

// Two replicas on a Redis Cluster (three primaries, a replica each) share
// rate limits and session budgets whatever slot a key's counters land in,
// with no CROSSSLOT; a primary is stopped in the middle of a run of
// requests: fail_open serves on through the failover, and counting goes
// on on the promoted replica, having lost at most the window's counts (and
// admitted uncounted, by fail_open, the requests a gateway sent before its
// client caught up with the new primary).
func TestRedisClusterGateway(t *testing.T) {
	cl := testredis.StartCluster(t)
	const perKey, keys = 12, 6
	var keyYAML []string
	for i := range keys {
		keyYAML = append(keyYAML, fmt.Sprintf(`{name: k%d, sha256: %s, rate_limit: {requests_per_minute: %d}}`, i, gatewaytest.KeyHash(fmt.Sprintf("sk-%d", i)), perKey))
	}
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	yaml := `
state: {store: redis, redis_url: "` + cl.Seeds() + `", timeout: 10s, on_error: fail_open}
keys: [` + strings.Join(keyYAML, ", ") + `]
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: "*", upstream: sim, budget: {max_calls: 2}}]
`
	gws := []*gatewaytest.Env{gatewaytest.Start(t, up.URL, yaml), gatewaytest.Start(t, up.URL, yaml)}
	call := func(i, n int, session string) (int, string) {
		hdr := []string{"Authorization", fmt.Sprintf("Bearer sk-%d", i)}
		if session != "" {
			hdr = append(hdr, "X-Session-Id", session)
		}
		resp, b := gws[n%2].Do(t, "POST", "/chat/completions", `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, hdr...)
		return resp.StatusCode, b
	}

	// A session budget across replicas, for every key (several slots).
	for i := range keys {
		for n := range 2 {
			if code, body := call(i, n, "s"); code != 200 {
				t.Fatalf("key %d, call %d of the session: %d %s", i, n+1, code, body)
			}
		}
		if code, body := call(i, 2, "s"); code != 429 || !strings.Contains(body, "max_calls_exceeded") {
			t.Fatalf("key %d, third call of the session: %d %s", i, code, body)
		}
	}
	// 3 requests of each key are counted (the refused one is not). Half of
	// what is left is spent, a primary fails over, then each key is used
	// until it is refused: between the limit and the limit plus what was
	// counted before the failover (lost with it at most).
	admitted := make([]int, keys)
	for i := range keys {
		admitted[i] = 2
	}
	before := make([]int, keys)
	stop := make(chan struct{})
	done := make(chan []int)
	go func() { // requests go on through the failover
		codes := map[int]int{}
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- []int{codes[200], codes[429], len(codes)}
				return
			default:
			}
			code, _ := call(keys-1, n, "")
			codes[code]++
		}
	}()
	for i := range keys - 1 {
		for n := range perKey/2 - 2 {
			if code, body := call(i, n, ""); code != 200 {
				t.Fatalf("key %d, request %d before the failover: %d %s", i, n, code, body)
			}
			admitted[i]++
		}
		before[i] = admitted[i]
	}
	victim := cl.Failover()
	close(stop)
	bg := <-done
	stateErrors := func() int {
		return gws[0].Logs.FilterMessage("state store unavailable").Len() + gws[1].Logs.FilterMessage("state store unavailable").Len()
	}
	uncounted := make([]int, keys) // admitted by fail_open while a replica's client caught up
	if bg[0] == 0 || bg[0]+bg[1] == 0 || bg[2] > 2 {
		t.Errorf("requests during the failover: %d admitted, %d refused, %d distinct statuses", bg[0], bg[1], bg[2])
	}
	for i := range keys - 1 {
		for n := 0; ; n++ {
			errsBefore := stateErrors()
			code, body := call(i, n, "")
			if stateErrors() > errsBefore {
				uncounted[i]++
			}
			if code == 429 {
				if !strings.Contains(body, "rate_limit_exceeded") {
					t.Errorf("key %d refused for %s", i, body)
				}
				break
			}
			if code != 200 {
				t.Fatalf("key %d after the failover of %s: %d %s", i, victim, code, body)
			}
			admitted[i]++
			if admitted[i] > perKey+before[i]+uncounted[i] {
				t.Fatalf("key %d: %d admitted, more than the limit %d plus the %d counted before the failover and the %d admitted uncounted (fail_open)",
					i, admitted[i], perKey, before[i], uncounted[i])
			}
		}
		if admitted[i] < perKey {
			t.Errorf("key %d refused after %d requests, under its limit %d", i, admitted[i], perKey)
		}
		// The first error reloads the slot map: a gateway's client misses
		// the new primary for a request or two, not until its periodic
		// refresh.
		if uncounted[i] > 4 {
			t.Errorf("key %d: %d requests admitted uncounted after the failover; the clients did not find the new primary", i, uncounted[i])
		}
	}
	for _, e := range gws {
		if n := e.Logs.FilterMessage("state store unavailable").Len(); n > 0 {
			for _, l := range e.Logs.FilterMessage("state store unavailable").All() {
				if strings.Contains(fmt.Sprint(l.ContextMap()), "CROSSSLOT") {
					t.Fatalf("CROSSSLOT: %v", l.ContextMap())
				}
			}
			t.Logf("state errors during the failover (fail_open served): %d", n)
		}
	}
	t.Logf("admitted per key %v (limit %d, counted before the failover %v, uncounted after it %v); during the failover %d admitted, %d refused", admitted, perKey, before, uncounted, bg[0], bg[1])
}

// A request's remembered state is looked up in one round trip however
// long its transcript: a 100-message conversation of 33 tool-call turns,
// through an upstream that has both its reasoning and its calls'
// signatures restored, costs Redis two MGETs (one for each) and no GET.
func TestRedisLookupsPerRequest(t *testing.T) {
	srv := testredis.Start(t)
	a, _, _ := twoGateways(t, srv, reasoningOnRedis)
	gets, mgets := srv.Calls(t, "get"), srv.Calls(t, "mget")
	resp := a.Post(t, string(sim.Transcript("sim-text", 100, -1)))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if g, m := srv.Calls(t, "get")-gets, srv.Calls(t, "mget")-mgets; g != 0 || m != 2 {
		t.Errorf("a 33-turn transcript cost %d GETs and %d MGETs, want 0 and 2", g, m)
	}
}

package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/observetest"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

const simAnswer = "Hello from the toolgate simulator. This answer was streamed in small pieces, the way a real model sends its tokens."

// A streamed answer reaches an openai-go client whole, with finish_reason
// stop, and the access log records the route, upstream and TTFB.
func TestStreamText(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{Chunks: 12})
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "sim-text", Messages: gatewaytest.UserMsg("hi"),
	})
	var text strings.Builder
	chunks, finish := 0, ""
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != simAnswer || finish != "stop" || chunks != 14 {
		t.Fatalf("got %d chunks, finish %q, text %q", chunks, finish, text.String())
	}
	a := e.WaitAccess(t, 1)[0]
	if a["route"] != "default" || a["upstream"] != "sim" || a["status"] != int64(200) || a["outcome"] != "ok" || a["stream"] != true {
		t.Errorf("access line %v", a)
	}
	if ttfb, _ := a["ttfb_ms"].(time.Duration); ttfb <= 0 {
		t.Errorf("ttfb = %v", a["ttfb_ms"])
	}
}

// A streamed tool call reaches the client as one complete call.
func TestStreamToolCall(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "sim-tool", Messages: gatewaytest.UserMsg("weather?"),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "lookup"})},
	})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "lookup" || calls[0].Function.Arguments != `{"city":"Paris"}` ||
		calls[0].ID != "call_sim_1" || acc.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("calls %+v finish %q", calls, acc.Choices[0].FinishReason)
	}
}

// A non-streamed request is answered with the upstream's completion, and a
// route's upstream_model replaces the client's model name upstream.
func TestNonStreamAndModelRewrite(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{})
	res, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "my-alias", Messages: gatewaytest.UserMsg("hi"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != simAnswer || res.Model != "sim-text" {
		t.Fatalf("got %q from %q", res.Choices[0].Message.Content, res.Model)
	}
	var sent struct{ Model string }
	json.Unmarshal(s.LastRequest(), &sent)
	if sent.Model != "sim-text" {
		t.Errorf("upstream got model %q", sent.Model)
	}
	if a := e.WaitAccess(t, 1)[0]; a["route"] != "alias" || a["model"] != "sim-text" {
		t.Errorf("access line %v", a)
	}
}

// Fields the gateway does not know, at the top level and inside messages,
// reach the upstream byte-for-byte (faithful proxy).
func TestUnknownFieldsReachUpstream(t *testing.T) {
	e, s := gatewaytest.StartSim(t, sim.Options{})
	body := `{"model":"sim-text","messages":[{"role":"system","content":"be brief","cache_control":{"type":"ephemeral"}},` +
		`{"role":"assistant","content":"","reasoning_content":"thought  here","x_vendor":[1,2.50]},{"role":"user","content":"hi"}],` +
		`"response_format":{"type":"json_object"},"logprobs":true,"top_logprobs":3,"seed":7,"metadata":{"k":"v"}}`
	resp := e.Post(t, body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := string(s.LastRequest()); got != body {
		t.Errorf("upstream received a different body\n got: %s\nwant: %s", got, body)
	}
}

// The client's credentials never reach the upstream; the configured key
// does. Client headers pass only when allow-listed (User-Agent,
// Idempotency-Key, …) or named in the upstream's forward_headers; every
// other one — another provider's key or betas, addresses, custom headers,
// hop-by-hop ones — stays at the gateway.
func TestCredentialsNotForwarded(t *testing.T) {
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	t.Cleanup(up.Close)
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}", forward_headers: [x-title]}]
routes: [{model: "*", upstream: sim}]
`)
	resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer client-secret", "X-Api-Key", "client-secret", "Api-Key", "client-secret",
		"Cookie", "session=client-secret", "OpenAI-Organization", "org-client", "Connection", "close, X-Hop",
		"X-Hop", "hop", "X-Custom", "dropped", "X-Goog-Api-Key", "client-secret", "Anthropic-Beta", "b", "X-Real-Ip", "1.2.3.4",
		"User-Agent", "agent/1", "Idempotency-Key", "idem-1", "X-Title", "my app")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h := s.LastHeader()
	if h.Get("Authorization") != "Bearer upstream-secret" {
		t.Errorf("upstream Authorization = %q", h.Get("Authorization"))
	}
	for k, vv := range h {
		for _, v := range vv {
			if strings.Contains(v, "client-secret") || strings.Contains(v, "org-client") {
				t.Errorf("client credential forwarded in %s: %s", k, v)
			}
		}
	}
	for _, k := range []string{"X-Hop", "X-Custom", "Anthropic-Beta", "X-Real-Ip"} {
		if h.Get(k) != "" {
			t.Errorf("%s forwarded: %q", k, h.Get(k))
		}
	}
	if h.Get("User-Agent") != "agent/1" || h.Get("Idempotency-Key") != "idem-1" || h.Get("X-Title") != "my app" {
		t.Errorf("allow-listed headers not forwarded: %v", h)
	}
}

// An upstream 500 reaches openai-go as an error, streamed or not, with the
// upstream's message kept (docs/spec.md §7).
func TestUpstreamError(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	c := e.Client("k")
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "sim-error", Messages: gatewaytest.UserMsg("hi")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || !strings.Contains(apiErr.Message, "The simulator was asked to fail") {
		t.Fatalf("err = %v", err)
	}
	if apiErr.Code != "upstream_error" || apiErr.Type != "upstream_error" {
		t.Errorf("code %q type %q", apiErr.Code, apiErr.Type)
	}
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "sim-error", Messages: gatewaytest.UserMsg("hi")})
	for stream.Next() {
		t.Fatal("a chunk arrived from a failed upstream")
	}
	if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != 502 {
		t.Fatalf("stream err = %v", stream.Err())
	}
	a := e.WaitAccess(t, 2)
	if a[0]["error_kind"] != "status" || a[0]["outcome"] != "upstream" {
		t.Errorf("access %v", a[0])
	}
	if got := e.Metric(t, "toolgate_upstream_errors_total", nil); got != 2 {
		t.Errorf("toolgate_upstream_errors_total = %v", got)
	}
}

// Upstream statuses map to fitting client statuses: request errors pass
// through with the upstream's own body, rate limits stay 429, credential
// failures are the gateway's (502), timeouts 504 (docs/spec.md §7).
func TestUpstreamStatusMapping(t *testing.T) {
	for _, tc := range []struct {
		status     int
		body       string
		wantStatus int
		wantMsg    string
	}{
		{400, `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[1].role","code":null}}`,
			400, "must be a response to a preceeding message"},
		{429, `{"error":{"message":"Rate limit reached","type":"requests"}}`, 429, "Rate limit reached"},
		{401, `{"error":{"message":"Incorrect API key provided"}}`, 502, "refused the gateway's credentials"},
		{504, `upstream timed out`, 504, "upstream timed out"},
		{503, `<html>busy</html>`, 503, "Service Unavailable"},
		{500, `{"message":"flat message"}`, 502, "flat message"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer up.Close()
			e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
			resp := e.Post(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
			body, b := gatewaytest.ReadError(t, resp)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(body.Error.Message, tc.wantMsg) || body.Error.Type == "" {
				t.Fatalf("status %d body %s", resp.StatusCode, b)
			}
			if tc.status == 400 && (body.Error.Param == nil || *body.Error.Param != "messages.[1].role") {
				t.Errorf("the upstream's param was not kept: %s", b)
			}
		})
	}
}

// An upstream that cannot be reached is a 502 with a clear message.
func TestUpstreamUnreachable(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	addr := up.URL
	up.Close()
	e := gatewaytest.Start(t, addr, gatewaytest.SimConfig)
	resp := e.Post(t, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(b), "upstream_unreachable") {
		t.Fatalf("status %d body %s", resp.StatusCode, b)
	}
	if a := e.WaitAccess(t, 1)[0]; a["error_kind"] != "connect" {
		t.Errorf("access %v", a)
	}
}

// A stream the upstream cuts mid-way (connection reset) reaches the client
// as an error after the chunks already sent, never as success; so does a
// stream that ends cleanly without [DONE], and an error event mid-stream.
func TestBrokenStreams(t *testing.T) {
	chunk := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":null}]}`
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		wantMsg string
	}{
		{"reset", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}, "broke off its response"},
		{"eof without done", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}, "broke off its response"},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\ndata: {\"error\":{\"message\":\"Provider returned error\",\"code\":502}}\n\ndata: [DONE]\n\n", chunk)
		}, "Provider returned error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(tc.handler)
			defer up.Close()
			e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
			stream := e.Client("k").Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: gatewaytest.UserMsg("hi")})
			n := 0
			for stream.Next() {
				n++
			}
			if n != 1 || stream.Err() == nil || !strings.Contains(stream.Err().Error(), tc.wantMsg) {
				t.Fatalf("chunks %d, err %v", n, stream.Err())
			}
			if a := e.WaitAccess(t, 1)[0]; a["outcome"] != "incomplete" || a["error_kind"] != "stream" {
				t.Errorf("access %v", a)
			}
		})
	}
}

// A stream that breaks before its first event is answered with a real
// status: nothing had been committed yet.
func TestStreamBrokenBeforeFirstEvent(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
	resp := e.Post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(b), "upstream_stream_incomplete") ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s body %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// A cut non-streamed body and one that is not JSON are errors too.
func TestBrokenNonStream(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	_, err := e.Client("k").Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "sim-cut", Messages: gatewaytest.UserMsg("hi")})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 {
		t.Fatalf("err = %v", err)
	}
}

// A client that disconnects mid-stream cancels the upstream call promptly,
// and the access log says the client went away.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	upstreamDone := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // the server notices a closed connection only once the body is read
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a slow model: nothing more until the caller leaves
		close(upstreamDone)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig)
	ctx, cancel := context.WithCancel(context.Background())
	stream := e.Client("k").Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: gatewaytest.UserMsg("hi")})
	if !stream.Next() {
		t.Fatalf("no first chunk: %v", stream.Err())
	}
	cancel()
	select {
	case <-upstreamDone:
	case <-time.After(wait.Patience):
		t.Fatal("the upstream call was not cancelled after the client left")
	}
	stream.Close()
	a := e.WaitAccess(t, 1)[0]
	if a["client_gone"] != true || a["outcome"] != "client_gone" {
		t.Errorf("access %v", a)
	}
	if a["error_kind"] != nil {
		t.Errorf("a client leaving was counted against the upstream: %v", a)
	}
}

// Bad input gets a clear OpenAI-style error with a fitting status, and
// nothing is sent upstream.
func TestBadInput(t *testing.T) {
	s := sim.New(sim.Options{})
	up := httptest.NewServer(s)
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: sim, url: "UPSTREAM_URL/v1"}]
routes: [{model: m, upstream: sim}]
`)
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 11<<20) + `"}]}`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"malformed", "POST", "/v1/chat/completions", `{"model":"m",,}`, 400, "invalid_json", "at byte offset 13"},
		{"no model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, "missing_required_parameter", "model"},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"m"}`, 400, "missing_required_parameter", "messages"},
		{"bad role", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"content":"x"}]}`, 400, "invalid_value", "messages[0].role"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found", "`nope`"},
		{"wrong method", "GET", "/v1/chat/completions", ``, 405, "method_not_allowed", "use POST"},
		{"wrong method models", "POST", "/v1/models", `{}`, 405, "method_not_allowed", "use GET"},
		{"unknown path", "POST", "/v1/embeddings", `{}`, 404, "unknown_url", "/v1/embeddings"},
		{"wrong method, a stored response", "PUT", "/v1/responses/resp_1", ``, 405, "method_not_allowed", "use GET or DELETE"},
		{"below a stored response", "GET", "/v1/responses/resp_1/", ``, 404, "unknown_url", "/v1/responses/resp_1/"},
		{"oversize", "POST", "/v1/chat/completions", big, 413, "request_too_large", "10485760 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, strings.TrimSuffix(e.URL, "/v1")+tc.path, strings.NewReader(tc.body))
			resp, err := e.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, b := gatewaytest.ReadError(t, resp)
			if resp.StatusCode != tc.status || body.Error.Code == nil || *body.Error.Code != tc.code ||
				!strings.Contains(body.Error.Message, tc.msg) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("status %d body %s", resp.StatusCode, b)
			}
		})
	}
	if s.Requests() != 0 {
		t.Errorf("%d requests reached the upstream", s.Requests())
	}
	_ = e.WaitAccess(t, 11)
}

// X-Request-Id is taken from the client when given, generated otherwise,
// returned, and written in the access log.
func TestRequestID(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	resp := e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, "X-Request-Id", "client-id-1")
	resp.Body.Close()
	if resp.Header.Get("X-Request-Id") != "client-id-1" {
		t.Errorf("X-Request-Id = %q", resp.Header.Get("X-Request-Id"))
	}
	resp = e.Post(t, `{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`, "X-Request-Id", "bad id\twith spaces")
	resp.Body.Close()
	gen := resp.Header.Get("X-Request-Id")
	if len(gen) != 24 {
		t.Errorf("generated id %q", gen)
	}
	a := e.WaitAccess(t, 2)
	if gatewaytest.WithField(a, "request_id", "client-id-1") == nil || gatewaytest.WithField(a, "request_id", gen) == nil {
		t.Errorf("access ids %v %v", a[0]["request_id"], a[1]["request_id"])
	}
}

// GET /v1/models lists every route in OpenAI's shape.
func TestModels(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	page, err := e.Client("k").Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID+"@"+m.OwnedBy)
	}
	if strings.Join(ids, ",") != "my-alias@sim,*@sim" {
		t.Errorf("models %v", ids)
	}
}

// The metrics pass the Prometheus linter and count what happened.
func TestMetrics(t *testing.T) {
	e, _ := gatewaytest.StartSim(t, sim.Options{})
	for _, model := range []string{"sim-text", "sim-error"} {
		resp := e.Post(t, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"x"}]}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	e.WaitAccess(t, 2)
	problems, err := testutil.GatherAndLint(e.Reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	want := `
# HELP toolgate_requests_total Requests handled, by route and HTTP status code (499: the client went away first).
# TYPE toolgate_requests_total counter
toolgate_requests_total{code="200",route="default"} 1
toolgate_requests_total{code="502",route="default"} 1
`
	if err := testutil.GatherAndCompare(e.Reg, strings.NewReader(want), "toolgate_requests_total"); err != nil {
		t.Error(err)
	}
	// One streamed request (sim-text) reached its first token, whose time
	// is within the request's own duration.
	if n := e.Metric(t, "toolgate_time_to_first_token_seconds", map[string]string{"route": "default"}); n != 1 {
		t.Errorf("%v time-to-first-token samples, want 1", n)
	}
	ttft := observetest.Sum(t, e.Registry(), "toolgate_time_to_first_token_seconds", nil)
	total := observetest.Sum(t, e.Registry(), "toolgate_request_duration_seconds", map[string]string{"stream": "true"})
	if ttft <= 0 || ttft > total {
		t.Errorf("time to first token %vs, streamed requests took %vs", ttft, total)
	}
}

// The admin handler serves health, readiness and metrics.
func TestAdmin(t *testing.T) {
	reg := prometheus.NewRegistry()
	observe.NewMetrics(reg)
	ready := false
	srv := httptest.NewServer(gateway.NewAdmin(reg, func() bool { return ready }, false, nil))
	defer srv.Close()
	prof := httptest.NewServer(gateway.NewAdmin(reg, func() bool { return ready }, true, nil))
	defer prof.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Errorf("readyz before ready %d", code)
	}
	ready = true
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("readyz %d", code)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_") {
		t.Errorf("metrics %d", code)
	}
	// pprof only when server.pprof is on.
	if code, _ := get("/debug/pprof/heap"); code != 404 {
		t.Errorf("pprof off: %d", code)
	}
	resp, err := http.Get(prof.URL + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "heap profile") {
		t.Errorf("pprof on: %d %.80s", resp.StatusCode, b)
	}
	http.DefaultClient.CloseIdleConnections()
}

var _ = bytes.Equal

package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testing/wait"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func post(t *testing.T, url, body string) (*http.Response, string, error) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// The model name picks the script; the last request body is kept.
func TestScripts(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()

	resp, body, err := post(t, srv.URL, `{"model":"sim-error-429","messages":[]}`)
	if err != nil || resp.StatusCode != 429 || !strings.Contains(body, `"message":"The simulator was asked to fail`) {
		t.Errorf("error script: %v %d %s", err, resp.StatusCode, body)
	}
	resp, body, _ = post(t, srv.URL, `{"model":"sim-error","messages":[]}`)
	if resp.StatusCode != 500 {
		t.Errorf("sim-error: %d %s", resp.StatusCode, body)
	}

	req := `{"model":"x-tool","stream":true,"tools":[{"type":"function","function":{"name":"search"}}],"messages":[]}`
	_, body, _ = post(t, srv.URL, req)
	if !strings.Contains(body, `"name":"search"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") ||
		!strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Errorf("tool stream: %s", body)
	}
	if string(s.LastRequest()) != req {
		t.Errorf("LastRequest = %s", s.LastRequest())
	}

	_, body, _ = post(t, srv.URL, `{"model":"m","messages":[],"stream_options":{"include_usage":true},"stream":true}`)
	if !strings.Contains(body, `"choices":[],`) || !strings.Contains(body, `"usage"`) {
		t.Errorf("usage chunk missing: %s", body)
	}

	_, _, err = post(t, srv.URL, `{"model":"sim-cut","stream":true,"messages":[]}`)
	if err == nil {
		t.Error("cut stream read without error")
	}
	_, body, _ = post(t, srv.URL, `{"model":"m","messages":[]}`)
	var c struct {
		Object  string
		Choices []struct{ Message struct{ Content string } }
	}
	if json.Unmarshal([]byte(body), &c) != nil || c.Object != "chat.completion" || !strings.HasPrefix(c.Choices[0].Message.Content, "Hello") {
		t.Errorf("text completion: %s", body)
	}
	if s.Requests() != 6 {
		t.Errorf("Requests = %d", s.Requests())
	}
}

// Fast mode serves the same shapes from pre-encoded bytes.
func TestFast(t *testing.T) {
	srv := httptest.NewServer(New(Options{Fast: true, Chunks: 50}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	_, body, _ := post(t, srv.URL, `{"model":"m","stream":true,"messages":[]}`)
	if n := strings.Count(body, "data: "); n != 53 { // role, 50 chunks, finish, [DONE]
		t.Errorf("%d events", n)
	}
}

// A paced stream, also in fast mode, is the same bytes as the pre-encoded
// one, its chunks PacedDelay apart: 52 pauses for a 50-chunk answer.
func TestPaced(t *testing.T) {
	const delay = 2 * time.Millisecond
	srv := httptest.NewServer(New(Options{Fast: true, Chunks: 50, PacedDelay: delay}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	_, whole, _ := post(t, srv.URL, `{"model":"m","stream":true,"messages":[]}`)
	start := time.Now()
	_, paced, err := post(t, srv.URL, `{"model":"m-paced","stream":true,"messages":[]}`)
	if err != nil || paced != whole {
		t.Fatalf("paced stream %v:\n%s\nwant the pre-encoded one:\n%s", err, paced, whole)
	}
	if took := time.Since(start); took < 52*delay {
		t.Errorf("a 53-event paced stream took %v, less than 52 pauses of %v", took, delay)
	}
}

// The slow script stops when its caller goes away, and counts it.
func TestSlowCancellation(t *testing.T) {
	s := New(Options{SlowDelay: wait.Patience}) // the stream cannot end before its caller leaves
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"sim-slow","stream":true,"messages":[]}`))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 64))
	cancel()
	resp.Body.Close()
	wait.For(t, "the slow stream to notice its caller leaving", func() bool { return s.Cancellations() > 0 })
}

// Transcript builds exactly n messages, with the one unanswered call asked for.
func TestTranscript(t *testing.T) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	for _, n := range []int{3, 10, 100} {
		if err := json.Unmarshal(Transcript("m", n, 1), &req); err != nil || len(req.Messages) != n {
			t.Fatalf("n=%d: %d messages, %v", n, len(req.Messages), err)
		}
	}
	tools := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			tools++
		}
	}
	if tools != 32 { // 33 calls, one unanswered
		t.Errorf("%d tool replies in 100 messages", tools)
	}
}

// The parallel script streams four calls, each whole: its arguments, in
// parallelFragments fragments, add up to parallelArgs; the non-streamed
// answer carries the same calls.
func TestParallel(t *testing.T) {
	for _, fast := range []bool{false, true} {
		srv := httptest.NewServer(New(Options{Fast: fast}))
		_, body, err := post(t, srv.URL, `{"model":"sim-parallel","stream":true,"messages":[]}`)
		if err != nil {
			t.Fatal(err)
		}
		args := map[int]string{}
		frags := map[int]int{}
		for data := range wiretest.Data(body) {
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Index    int
							Function struct{ Arguments string }
						} `json:"tool_calls"`
					}
				}
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if tc.Function.Arguments != "" {
						args[tc.Index] += tc.Function.Arguments
						frags[tc.Index]++
					}
				}
			}
		}
		if len(args) != parallelCalls {
			t.Fatalf("fast=%v: %d calls", fast, len(args))
		}
		for k := range parallelCalls {
			if args[k] != parallelArgs || frags[k] != parallelFragments {
				t.Errorf("fast=%v: call %d: %d fragments, arguments %q", fast, k, frags[k], args[k])
			}
		}
		_, body, _ = post(t, srv.URL, `{"model":"sim-parallel","messages":[]}`)
		if n := strings.Count(body, `"id":"call_sim_`); n != parallelCalls {
			t.Errorf("fast=%v: non-streamed answer has %d calls: %s", fast, n, body)
		}
		srv.Close()
	}
	http.DefaultClient.CloseIdleConnections()
}

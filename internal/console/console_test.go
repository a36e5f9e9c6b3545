package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/observe"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// record is a finished request's record: a transcript repaired, an
// answer normalized, an attempt that failed before one that answered.
func record(i int) *observe.Record {
	return &observe.Record{RequestID: "req-" + strings.Repeat("x", i%3), Method: "POST", Path: "/v1/chat/completions", Route: "default",
		Key: "team-a", Upstream: "sim", Model: "m", Status: 200, Outcome: "ok", Start: time.Now(), Duration: 3 * time.Millisecond,
		UpstreamDuration: 2 * time.Millisecond, Repairs: []observe.Count{{Name: "sealed", N: 1}, {Name: "moved", N: 0}},
		RepairDetail: &observe.RepairDetail{Actions: []observe.RepairAction{{Action: "sealed", Index: 1, CallID: "call_a"}},
			Before: []observe.Turn{{Role: "user"}, {Index: 1, Role: "assistant", IDs: []string{"call_a"}}},
			After:  []observe.Turn{{Role: "user"}, {Role: "assistant", IDs: []string{"call_a"}}, {Role: "tool", IDs: []string{"call_a"}}}},
		Attempts: []observe.Attempt{{Route: "default", Upstream: "other", Outcome: observe.AttemptConnect, Cooldown: "unreachable"},
			{Route: "default", Upstream: "sim", Outcome: observe.AttemptOK, Verdict: "ok", Fixes: []observe.Count{{Name: "index_reuse", N: 2}}}}}
}

// The ring keeps the latest Recent requests, newest first, whatever
// passes through it; an entry holds the record's outline, copied.
func TestRingBound(t *testing.T) {
	c := New(Options{Recent: 5})
	defer c.Close()
	for i := range 12 {
		c.Add(record(i))
	}
	got := c.recent()
	if len(got) != 5 || got[0].ID != "12" || got[4].ID != "8" {
		t.Fatalf("%d entries, newest %s, oldest %s", len(got), got[0].ID, got[4].ID)
	}
	e := got[0]
	if e.OverheadMs != 1 || len(e.Repairs) != 1 || e.Repair.Actions[0].CallID != "call_a" || len(e.Repair.After) != 3 ||
		e.Fixes[0] != (Fix{Kind: "index_reuse", Quirk: "A02", N: 2}) || e.Attempts[0].Cooldown != "unreachable" {
		t.Errorf("%+v", e)
	}
	none := New(Options{})
	defer none.Close()
	none.Add(record(0))
	if len(none.recent()) != 0 {
		t.Error("a console that keeps none kept one")
	}
	var nilConsole *Console
	nilConsole.Add(record(0)) // the gateway without a console
	nilConsole.SetLoaded("x", nil)
	nilConsole.Close()
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Result(), b
}

// The JSON API's shapes (docs/operations.md), the page's headers (a
// strict CSP), and the token: asked of the API, by header or query, never
// of the page's static files.
func TestAPI(t *testing.T) {
	c := New(Options{Recent: 10, Token: "console-token", Version: "v-test"})
	defer c.Close()
	c.SetLoaded("gateway.yaml", nil)
	c.Add(record(1))
	reg := prometheus.NewRegistry()
	m := observe.NewMetrics(reg)
	m.Observe(record(1))
	h := c.Handler(func() Source { return nil }, reg)
	resp, _ := get(t, h, "/ui/")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("the page: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, h, "/ui/api/overview"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %d", resp.StatusCode)
	}
	if resp, _ := get(t, h, "/ui/api/overview", "Authorization", "Bearer wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
	var o Overview
	if _, b := get(t, h, "/ui/api/overview?token=console-token"); json.Unmarshal(b, &o) != nil || o.Version != "v-test" || o.Config.File != "gateway.yaml" || o.Kept != 10 {
		t.Errorf("the overview: %s", b)
	}
	var f Fixed
	if _, b := get(t, h, "/ui/api/fixed", "Authorization", "Bearer console-token"); json.Unmarshal(b, &f) != nil ||
		len(f.Repairs) != 1 || f.Repairs[0] != (Count{Name: "sealed", N: 1}) || f.Normalizations[0] != (Fix{Kind: "index_reuse", Quirk: "A02", N: 2}) {
		t.Errorf("what was fixed: %s", b)
	}
	var rs []Entry
	if _, b := get(t, h, "/ui/api/requests?token=console-token"); json.Unmarshal(b, &rs) != nil || len(rs) != 1 {
		t.Errorf("the requests: %s", b)
	}
	if resp, b := get(t, h, "/ui/api/requests/1?token=console-token"); resp.StatusCode != 200 || !strings.Contains(string(b), `"call_id":"call_a"`) {
		t.Errorf("one request: %d %s", resp.StatusCode, b)
	}
	if resp, _ := get(t, h, "/ui/api/requests/99?token=console-token"); resp.StatusCode != 404 {
		t.Errorf("a request not kept: %d", resp.StatusCode)
	}
	if _, b := get(t, h, "/ui/quirks"); !strings.Contains(string(b), `<tr id="a02"><th>A02</th>`) {
		t.Error("the quirks page has no row A02")
	}
	c.SetLoaded("", io.ErrUnexpectedEOF)
	if _, b := get(t, h, "/ui/api/overview?token=console-token"); !strings.Contains(string(b), `"file":"gateway.yaml"`) || !strings.Contains(string(b), "unexpected EOF") {
		t.Errorf("a failed reload: %s", b)
	}
}

// A request's entry reaches a session of the live feed as a "request"
// event.
func TestLiveFeed(t *testing.T) {
	c := New(Options{Recent: 10})
	defer c.Close()
	srv := httptest.NewServer(c.Handler(func() Source { return nil }, nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ui/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%v", resp.Header)
	}
	// The session counts before the feed's provider has it: requests keep
	// coming until one reaches it, as they do to a console being watched.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				c.Add(record(0))
			}
		}
	}()
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "\n\n") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(buf[:n])
	}
	if !strings.HasPrefix(got.String(), "event: request\ndata: {") || !strings.Contains(got.String(), `"call_id":"call_a"`) {
		t.Errorf("%q", got.String())
	}
}

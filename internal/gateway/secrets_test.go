package gateway_test

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// Secrets the tests use: the upstream key, the client keys presented
// (all start with sk-), as bare values and as bearer credentials.
var secrets = []string{"upstream-secret", "sk-team-a", "sk-team-b", "sk-wrong", "sk-a\"", "sk-b\"", "sk-30", "sk-31", "sk-combo", "sk-fuzz-a", "sk-fuzz-b", "sk-ops-example", "Bearer sk-"}

// TestMain runs the package's tests, then greps everything the gateways
// logged and answered for a secret: none may appear.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		all := gatewaytest.Seen()
		if len(all) < 10000 && flag.Lookup("test.run").Value.String() == "" {
			println("secrets check: too little was recorded to be meaningful:", len(all), "bytes")
			code = 1
		}
		for _, s := range secrets {
			if i := strings.Index(all, s); i >= 0 {
				println("secrets check: found", s, "in:", all[max(i-200, 0):min(i+100, len(all))])
				code = 1
			}
		}
		if code == 0 {
			// go-redis probes a node it failed to dial (a stopped Redis,
			// a cluster's failed primary) from a goroutine that ends within
			// a second of the client's Close: not a leak.
			if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
				println("goleak:", err.Error())
				code = 1
			}
		}
	}
	os.Exit(code)
}

// An upstream that echoes the gateway's key in its error bodies (as some
// do in a 401's "Incorrect API key provided: …") never shows it: the key
// is scrubbed from every error body and message the gateway relays or
// logs, and a passthrough route answers an upstream 401 or 403 as every
// endpoint does (502 upstream_auth_failed), its body not relayed. An
// error the upstream reports in its answer — an error event in the middle
// of a stream, an error object in a whole answer — is scrubbed the same
// way, in the client's error and the log.
func TestUpstreamKeyNeverEchoed(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		status := map[string]int{"/v1/chat/completions": 400, "/v1/embeddings": 401, "/v1/moderations": 403}[r.URL.Path]
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "m-500") {
			status = 500
		}
		if strings.Contains(string(b), "m-midstream") && !strings.Contains(string(b), `"stream":true`) {
			fmt.Fprintf(w, `{"error":{"message":"quota exceeded for key %s","type":"server_error"}}`, key)
			return
		}
		if strings.Contains(string(b), "m-midstream") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`+"\n\n")
			fmt.Fprintf(w, `data: {"error":{"message":"quota exceeded for key %s","type":"server_error"}}`+"\n\n", key)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error"}}`, key)
	}))
	defer up.Close()
	e := gatewaytest.Start(t, up.URL, `
upstreams: [{name: echo, url: "UPSTREAM_URL/v1", api_key: "${UPSTREAM_KEY}"}]
routes: [{model: "*", upstream: echo}]
`)
	for _, c := range []struct{ path, body, want string }{
		{"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "400"},
		{"/embeddings", `{"model":"m","input":"hi"}`, "502"},
		{"/moderations", `{"model":"m","input":"hi"}`, "502"},
	} {
		resp, body := e.Do(t, "POST", c.path, c.body)
		if fmt.Sprint(resp.StatusCode) != c.want || strings.Contains(body, gatewaytest.UpstreamKey) {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, body)
		}
	}
	resp, body := e.Do(t, "POST", "/chat/completions", `{"model":"m-500","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 || !strings.Contains(body, "[redacted]") {
		t.Errorf("a 500: %d %s", resp.StatusCode, body)
	}
	for _, stream := range []bool{true, false} {
		resp, body := e.Do(t, "POST", "/chat/completions", fmt.Sprintf(`{"model":"m-midstream","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
		if strings.Contains(body, gatewaytest.UpstreamKey) || !strings.Contains(body, "[redacted]") {
			t.Errorf("an error in the answer, stream %v: %d %s", stream, resp.StatusCode, body)
		}
	}
	for _, l := range e.WaitAccess(t, 6) {
		if strings.Contains(fmt.Sprint(l), gatewaytest.UpstreamKey) {
			t.Errorf("the access log holds the key: %v", l)
		}
	}
}

package gateway_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
)

// BenchmarkManyBlocksRequest is the hostile Messages request of many
// tiny blocks — 10.5 MB, one user message of 388,354
// {"type":"text","text":"a"} blocks — served in process, by a key the
// model is not allowed to and by one it is: both are refused 400 naming
// the bound on blocks, counted as the body is read, before anything is
// decoded (at 80adfb7 the first was a 403 after the whole translation,
// the second translated and sent). It reports the CPU and the bytes
// allocated per request, and per byte of the body.
func BenchmarkManyBlocksRequest(b *testing.B) {
	g := newBenchGateway(b, `
keys:
  - {name: narrow, sha256: `+gatewaytest.KeyHash("sk-narrow")+`, models: ["other-*"]}
  - {name: wide, sha256: `+gatewaytest.KeyHash("sk-wide")+`}
upstreams: [{name: sim, url: "http://127.0.0.1:9/v1"}]
routes: [{model: "*", upstream: sim}]
`)
	body := []byte(`{"model":"sim-text","max_tokens":10,"messages":[{"role":"user","content":[` + strings.TrimSuffix(strings.Repeat(`{"type":"text","text":"a"},`, 388354), ",") + `]}]}`)
	for _, c := range []struct {
		name, key string
		status    int
	}{{"model-not-allowed", "sk-narrow", 400}, {"allowed", "sk-wide", 400}} {
		b.Run(c.name, func(b *testing.B) {
			cpu := gatewaytest.ProcessCPU()
			wiretest.AllocPerByte(b, len(body), func() {
				r := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
				r.Header.Set("X-Api-Key", c.key)
				r.Header.Set("Anthropic-Version", "2023-06-01")
				w := httptest.NewRecorder()
				g.ServeHTTP(w, r)
				if w.Code != c.status {
					b.Fatalf("%d %.300s", w.Code, w.Body.String())
				}
			})
			b.ReportMetric(float64(gatewaytest.ProcessCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

package gateway_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/internal/observe"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
)

// benchTargets runs the fast simulator and three ways to reach it over
// loopback: directly, through a bare httputil.ReverseProxy, and through
// toolgate (access log on, at info, to io.Discard; metrics on).
func benchTargets(b *testing.B, chunks int) map[string]string {
	up := httptest.NewServer(sim.New(sim.Options{Fast: true, Chunks: chunks}))
	b.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	bare := httptest.NewServer(rp)
	b.Cleanup(bare.Close)

	return map[string]string{"direct": up.URL, "reverseproxy": bare.URL, "toolgate": benchGateway(b, up.URL)}
}

// benchGateway runs toolgate (access log on, at info, to io.Discard;
// metrics on) in front of upstream and returns its URL.
func benchGateway(b *testing.B, upstream string) string {
	return benchGatewayRoute(b, upstream, "")
}

// benchGatewayRoute is benchGateway with more settings for its one route
// (YAML flow members, after a comma).
func benchGatewayRoute(b *testing.B, upstream, route string) string {
	g := newBenchGateway(b, `
upstreams: [{name: sim, url: "`+upstream+`/v1"}]
routes: [{model: "*", upstream: sim`+route+`}]
`)
	gw := httptest.NewServer(g)
	b.Cleanup(gw.Close)
	return gw.URL
}

// newBenchGateway is a gateway with the config yaml, logging nothing,
// for a benchmark to serve in process; it is closed with b.
func newBenchGateway(b *testing.B, yaml string, with ...func(*gateway.Options)) *gateway.Gateway {
	cfg, err := config.Parse([]byte(yaml), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	log, _, _ := observe.NewLogger(io.Discard, observe.Info, 0)
	opts := gateway.Options{Config: cfg, Logger: log, Metrics: observe.NewMetrics(prometheus.NewRegistry())}
	for _, w := range with {
		w(&opts)
	}
	g, err := gateway.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	return g
}

// chatStreamBody is the streamed request of the end-to-end benchmarks.
var chatStreamBody = []byte(`{"model":"sim","stream":true,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)

func benchChat(b *testing.B, stream bool, chunks int) {
	body := []byte(`{"model":"sim","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}]}`)
	if stream {
		body = chatStreamBody
	}
	benchBody(b, body, chunks)
}

func benchBody(b *testing.B, body []byte, chunks int) {
	benchTargetsBody(b, benchTargets(b, chunks), body)
}

func benchTargetsBody(b *testing.B, targets map[string]string, body []byte) {
	benchTargetsBetween(b, targets, body, nil)
}

// benchTargetsBetween measures each target's requests; between, when set,
// runs before each request, outside both the timer and the CPU counted.
func benchTargetsBetween(b *testing.B, targets map[string]string, body []byte, between func()) {
	for _, name := range []string{"direct", "reverseproxy", "toolgate"} {
		if targets[name] == "" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			tr := &http.Transport{MaxIdleConnsPerHost: 16}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := targets[name] + "/v1/chat/completions"
			b.ReportAllocs()
			// The whole process's CPU: the targets differ by their hop's.
			// With between, only each request's is counted (the timer's
			// own stops and starts read the allocation counters).
			var cpu time.Duration
			start := gatewaytest.ProcessCPU()
			for b.Loop() {
				if between != nil {
					b.StopTimer()
					between()
					b.StartTimer()
					start = gatewaytest.ProcessCPU()
				}
				resp, err := c.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
				}
				if between != nil {
					cpu += gatewaytest.ProcessCPU() - start
				}
			}
			if between == nil {
				cpu = gatewaytest.ProcessCPU() - start
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkChatNonStream measures one non-streamed request end to end over
// loopback, for direct / bare reverse proxy / toolgate in one run.
func BenchmarkChatNonStream(b *testing.B) { benchChat(b, false, 50) }

// BenchmarkChatTranscript measures one non-streamed request carrying a
// 100-message agent transcript with one unanswered call (repaired by
// toolgate): the repair path's cost over the bare proxy.
func BenchmarkChatTranscript(b *testing.B) {
	b.Run("broken", func(b *testing.B) { benchBody(b, sim.Transcript("sim-text", 100, 16), 50) })
	b.Run("paired", func(b *testing.B) { benchBody(b, sim.Transcript("sim-text", 100, -1), 50) })
}

// BenchmarkChatStream measures one 50-chunk streamed request end to end.
func BenchmarkChatStream(b *testing.B) { benchChat(b, true, 50) }

// BenchmarkChatStreamCold is BenchmarkChatStream with the caches cold:
// before each request (outside the timer and the CPU counted) the
// benchmark writes to 8 MB of memory (twice the second-level caches of
// the 2-core machine it was first measured on, 4 MB), as the other
// processes of a machine do between one stream and the next when streams
// are a few milliseconds apart (make bench's 200 streams a second). Hot, a hop costs about what its instructions do;
// cold, it also costs every line of code and data it touches — what
// separates toolgate from the bare proxy out of process
// (docs/performance.md).
func BenchmarkChatStreamCold(b *testing.B) {
	scratch := make([]byte, 8<<20)
	benchTargetsBetween(b, benchTargets(b, 50), chatStreamBody, func() {
		for i := 0; i < len(scratch); i += 64 {
			scratch[i]++
		}
	})
}

// BenchmarkChatStream1000 measures one 1000-chunk streamed request end to end.
func BenchmarkChatStream1000(b *testing.B) { benchChat(b, true, 1000) }

// BenchmarkChatToolCalls measures one stream of four parallel tool calls
// (the simulator's sim-parallel script, 50 argument fragments each) end
// to end, through a route with the settings of make bench's tool-call
// point (repair, the session policy, arguments checked against the
// tool's schema): in process, the same comparison with less noise.
func BenchmarkChatToolCalls(b *testing.B) {
	targets := benchTargets(b, 50)
	u, _ := url.Parse(targets["direct"])
	targets["toolgate"] = benchGatewayRoute(b, u.String(), ", repair: fix, policy: session, validate_arguments: annotate")
	body := []byte(`{"model":"sim-parallel","stream":true,"messages":[{"role":"user","content":"Weather in four cities, please."}],"tools":[` + sim.WeatherTool + `]}`)
	benchTargetsBody(b, targets, body)
}

// BenchmarkTTFT measures the time to the first content token, directly
// against the simulator and through toolgate, in one run. The simulator
// pauses 5 ms between chunks, so a gateway that held tokens back would
// show it. Reported as ttft-µs (mean per request); ns/op includes reading
// the whole stream.
func BenchmarkTTFT(b *testing.B) {
	up := httptest.NewServer(sim.New(sim.Options{Chunks: 4, ChunkDelay: 5 * time.Millisecond}))
	b.Cleanup(up.Close)
	gw := benchGateway(b, up.URL)
	body := []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for _, target := range []struct{ name, url string }{{"direct", up.URL}, {"toolgate", gw}} {
		b.Run(target.name, func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			var total time.Duration
			for b.Loop() {
				start := time.Now()
				resp, err := c.Post(target.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				r := bufio.NewReader(resp.Body)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						b.Fatal("no content token")
					}
					if strings.Contains(line, `"content":"Hello`) {
						total += time.Since(start)
						break
					}
				}
				io.Copy(io.Discard, r)
				resp.Body.Close()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N), "ttft-µs")
		})
	}
}

// BenchmarkConsoleCost is what the console costs a request while nobody
// has it open: the same gateway without a console (off) and with one
// keeping the last 100 requests (on), for a 50-chunk stream and a
// repaired 100-message transcript (whose outline the console keeps).
func BenchmarkConsoleCost(b *testing.B) {
	up := httptest.NewServer(sim.New(sim.Options{Fast: true, Chunks: 50}))
	b.Cleanup(up.Close)
	yaml := "upstreams: [{name: sim, url: \"" + up.URL + "/v1\"}]\nroutes: [{model: \"*\", upstream: sim}]\n"
	for _, body := range []struct {
		name string
		b    []byte
	}{{"stream", chatStreamBody}, {"transcript", sim.Transcript("sim-text", 100, 16)}} {
		for _, on := range []bool{false, true} {
			g := newBenchGateway(b, yaml, func(o *gateway.Options) {
				if on {
					c := console.New(console.Options{Recent: 100})
					b.Cleanup(c.Close)
					o.Console = c
				}
			})
			gw := httptest.NewServer(g)
			b.Cleanup(gw.Close)
			name := body.name + "/off"
			if on {
				name = body.name + "/on"
			}
			b.Run(name, func(b *testing.B) {
				benchTargetsBody(b, map[string]string{"toolgate": gw.URL}, body.b)
			})
		}
	}
}

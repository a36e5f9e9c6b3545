package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP trace receiver: it keeps the spans exported to it.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// The gateway exports its spans to a real OTLP receiver over the wire,
// over gRPC and over HTTP: a request continuing a client's trace gives a
// server span in that trace and a client span under it, sent by the time
// the gateway has stopped.
func TestTraceExport(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			rcv := &receiver{}
			var endpoint string
			if protocol == "grpc" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := grpc.NewServer()
				coltracepb.RegisterTraceServiceServer(srv, rcv)
				go srv.Serve(ln)
				defer srv.Stop()
				endpoint = "http://" + ln.Addr().String()
			} else {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					var req coltracepb.ExportTraceServiceRequest
					if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
						http.Error(w, "bad export", 400)
						return
					}
					_, _ = rcv.Export(r.Context(), &req)
					w.Header().Set("Content-Type", "application/x-protobuf")
					out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
					w.Write(out)
				}))
				defer srv.Close()
				endpoint = srv.URL
			}
			path := filepath.Join(t.TempDir(), "toolgate.yaml")
			os.WriteFile(path, []byte(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
telemetry: {otlp_endpoint: "`+endpoint+`", protocol: `+protocol+`}
upstreams: [{name: sim, simulator: true}]
routes: [{model: "*", upstream: sim}]
`), 0o600)
			ctx, cancel := context.WithCancel(context.Background())
			mainAddr, _, done, logs := started(t, ctx, []string{"-config", path}, func(string) string { return "" })
			req, _ := http.NewRequest("POST", "http://"+mainAddr+"/v1/chat/completions", strings.NewReader(`{"model":"sim-text","messages":[{"role":"user","content":"x"}]}`))
			req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			http.DefaultClient.CloseIdleConnections()
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("run: %v\n%s", err, logs)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			var server, client *tracepb.Span
			for _, s := range rcv.spans {
				switch s.Kind {
				case tracepb.Span_SPAN_KIND_SERVER:
					server = s
				case tracepb.Span_SPAN_KIND_CLIENT:
					client = s
				}
			}
			if server == nil || client == nil {
				t.Fatalf("received %d spans, want a server and a client span\n%s", len(rcv.spans), logs)
			}
			if hexID(server.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hexID(server.ParentSpanId) != "00f067aa0ba902b7" ||
				hexID(client.ParentSpanId) != hexID(server.SpanId) || server.Name != "chat sim-text" {
				t.Errorf("span tree: server %s %s parent %s, client parent %s", server.Name, hexID(server.TraceId), hexID(server.ParentSpanId), hexID(client.ParentSpanId))
			}
			found := false
			for _, kv := range server.Attributes {
				if kv.Key == "gen_ai.request.model" && kv.Value.GetStringValue() == "sim-text" {
					found = true
				}
			}
			if !found {
				t.Errorf("server span attributes: %v", server.Attributes)
			}
		})
	}
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

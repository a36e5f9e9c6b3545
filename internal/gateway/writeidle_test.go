package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testing/gatewaytest"
	"github.com/toolgate/toolgate/internal/testing/wait"
)

// A client that stops reading a stream is cut after
// server.write_idle_timeout, and its upstream call ends with it; a client
// that reads a stream whose upstream pauses for longer than the timeout
// is not.
func TestWriteIdleTimeout(t *testing.T) {
	const cfg = gatewaytest.SimConfig + "server: {write_idle_timeout: 300ms}\n"
	chunk := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 8<<10) + `"},"finish_reason":null}]}` + "\n\n"
	upstreamDone := make(chan struct{})
	var pause atomic.Int64 // nanoseconds between the chunks of the paused stream
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if p := time.Duration(pause.Load()); p > 0 { // a model that thinks between its tokens
			for range 3 {
				io.WriteString(w, chunk)
				w.(http.Flusher).Flush()
				time.Sleep(p)
			}
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
			return
		}
		defer close(upstreamDone)
		for r.Context().Err() == nil { // as fast as the gateway takes it, until it leaves
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()

	t.Run("not reading", func(t *testing.T) {
		e := gatewaytest.Start(t, up.URL, cfg)
		conn, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		status, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(status, "200") {
			t.Fatalf("status line %q, %v", status, err)
		}
		// From here on the client reads nothing, and keeps its connection.
		select {
		case <-upstreamDone:
		case <-time.After(wait.Patience):
			t.Fatal("the stream to a client that reads nothing was not cut")
		}
		a := e.WaitAccess(t, 1)[0]
		if a["outcome"] != "client_gone" {
			t.Errorf("access %v", a)
		}
	})

	t.Run("paused upstream", func(t *testing.T) {
		pause.Store(int64(700 * time.Millisecond)) // over twice the timeout
		e := gatewaytest.Start(t, up.URL, cfg)
		resp := e.Post(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Count(string(b), strings.Repeat("x", 8<<10)) != 3 {
			t.Fatalf("the paused stream did not arrive whole (%d bytes, %v): ...%q", len(b), err, b[max(0, len(b)-200):])
		}
		if a := e.WaitAccess(t, 1)[0]; a["outcome"] != "ok" {
			t.Errorf("access %v", a)
		}
	})
}

package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/sim"
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

// The deadline of a stream's last write also covers what the server
// writes once the handler has returned (the end of the chunked body, with
// a chat stream's [DONE]): a client that stops reading just then is cut
// after server.write_idle_timeout, not held without a deadline.
func TestWriteIdleTimeoutAtTheEnd(t *testing.T) {
	up := httptest.NewServer(sim.New(sim.Options{}))
	defer up.Close()
	stalling := &stallingListener{}
	e := gatewaytest.Start(t, up.URL, gatewaytest.SimConfig+"server: {write_idle_timeout: 300ms}\n",
		gatewaytest.Options{Listener: func(l net.Listener) net.Listener { stalling.Listener = l; return stalling }})
	resp := e.Post(t, `{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the stream ended whole although its last write stalled")
		}
	case <-time.After(wait.Patience):
		stalling.closeAll() // else the server would wait for the stalled write for ever
		t.Fatal("the stalled end of the stream was not cut: it had no write deadline")
	}
}

// stallingListener's connections stall the write that ends a chunked
// body, as a client that stopped reading just then would make it: the
// write waits for the connection's write deadline, or for ever.
type stallingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*stallingConn
}

func (l *stallingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	sc := &stallingConn{Conn: c, closed: make(chan struct{})}
	l.mu.Lock()
	l.conns = append(l.conns, sc)
	l.mu.Unlock()
	return sc, nil
}

func (l *stallingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

type stallingConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	closed   chan struct{}
	once     sync.Once
}

func (c *stallingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *stallingConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *stallingConn) Write(p []byte) (int, error) {
	if !bytes.HasSuffix(p, []byte("0\r\n\r\n")) {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	var expired <-chan time.Time // nil: no deadline, the write waits for ever
	if !dl.IsZero() {
		expired = time.After(time.Until(dl))
	}
	select {
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

func (c *stallingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestBodyReadableAfterAnswerStarts: the request's body must stay readable
// by the proxy's transport once the upstream's answer has started. The
// upstream here answers before the client has sent all of its body, then
// echoes the rest. Without full duplex, the proxy's server takes the body
// away from the transport when the answer starts (it drains it, or closes
// it when drained: the bench's cut streams), and the answer never arrives
// whole.
func TestBodyReadableAfterAnswerStarts(t *testing.T) {
	rest := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, "data: "+string(body)+"\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	px := httptest.NewServer(newProxy(u))
	defer px.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, "POST", px.URL+"/v1/chat/completions", pr)
	go func() { // the body: a first part, the rest once the answer has begun
		io.WriteString(pw, "one ")
		select {
		case <-rest:
			io.WriteString(pw, "two")
			pw.Close()
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
		}
	}()
	resp, err := px.Client().Do(req) // its connections closed with px
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "data: first\n" {
		t.Fatalf("the answer's first line: %q, %v", first, err)
	}
	close(rest)
	all, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("the answer was cut after %q: %v", all, err)
	}
	if !strings.Contains(string(all), "data: one two\n\ndata: [DONE]\n\n") {
		t.Fatalf("answer %q, want the whole body echoed and [DONE]", all)
	}
}

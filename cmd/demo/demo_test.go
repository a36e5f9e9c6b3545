package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo runs the scripted client through the gateway and the
// simulator and exits cleanly (what `make demo` runs).
func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := runDemo(context.Background(), &out, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"a streamed tool call", "name=get_weather", "X-Toolgate-Repair: sealed=1; dropped=0; moved=1", "call id=call_b", "reasoning_restored=1", "outcome=incomplete", "demo finished",
		"message (stop_reason end_turn)", "/ui/"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// Each thinking upstream's second turn had its state restored: the
	// reasoning (sim-deepseek), the thinking blocks (sim-claude), the
	// thought signatures (sim-gemini).
	for _, upstream := range []string{"upstream=sim-thinking ", "upstream=sim-anthropic ", "upstream=sim-gemini ", "upstream=sim-responses ", "upstream=sim-bedrock "} {
		restored := false
		for line := range strings.Lines(out.String()) {
			restored = restored || strings.Contains(line, upstream) && strings.Contains(line, "status=200") && strings.Contains(line, "reasoning_restored=1")
		}
		if !restored {
			t.Errorf("no turn restored on %s:\n%s", upstream, out.String())
		}
	}
}

// keptWriter is the demo's output, telling once the demo is kept serving.
type keptWriter struct {
	mu   sync.Mutex
	out  strings.Builder
	kept chan string // the console's URL
	once sync.Once
}

func (w *keptWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(p)
	if _, url, ok := strings.Cut(w.out.String(), "serving until Ctrl-C: gateway "); ok {
		if _, console, ok := strings.Cut(url, "console "); ok && strings.Contains(console, "\n") {
			w.once.Do(func() { w.kept <- strings.TrimSpace(console) })
		}
	}
	return len(p), nil
}

// make demo KEEP=1: the demo keeps serving, and its console shows the
// demo's own requests — the repaired transcript by its call ids, the
// quirky stream's normalization by its quirk — until Ctrl-C.
func TestDemoKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &keptWriter{kept: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- runDemo(ctx, w, true) }()
	var console string
	select {
	case console = <-w.kept:
	case err := <-done:
		t.Fatalf("the demo ended: %v", err)
	}
	resp, err := http.Get(console + "api/requests")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"action":"sealed"`, `"quirk":"A02"`, `"reasoning":{"level":"low","restored":1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the console's requests lack %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo runs the scripted client through the gateway and the
// simulator and exits cleanly (what `make demo` runs).
func TestDemo(t *testing.T) {
	var out strings.Builder
	if err := runDemo(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"a streamed tool call", "name=get_weather", "X-Toolgate-Repair: sealed=1; dropped=0; moved=1", "call id=call_b", "reasoning_restored=1", "outcome=incomplete", "demo finished",
		"message (stop_reason end_turn)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	// Each thinking upstream's second turn had its state restored: the
	// reasoning (sim-deepseek), the thinking blocks (sim-claude), the
	// thought signatures (sim-gemini).
	for _, upstream := range []string{"upstream=sim-thinking ", "upstream=sim-anthropic ", "upstream=sim-gemini ", "upstream=sim-responses "} {
		restored := false
		for line := range strings.Lines(out.String()) {
			restored = restored || strings.Contains(line, upstream) && strings.Contains(line, "status=200") && strings.Contains(line, "reasoning_restored=1")
		}
		if !restored {
			t.Errorf("no turn restored on %s:\n%s", upstream, out.String())
		}
	}
}

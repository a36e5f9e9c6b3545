package budget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolgate/toolgate/internal/state"
	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

func ptr(n int) *int { return &n }

// Presets exactly as docs/spec.md §5's table; a budget object is based on medium;
// exact values override, 0 and Unlimited kept as given.
func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Object
		want Limits
	}{
		{"small", Object{Preset: PresetSmall}, Limits{2, 8000, 4000, 512, 15 * time.Second}},
		{"medium by default", Object{}, Limits{8, 32000, 16000, 1024, 30 * time.Second}},
		{"large", Object{Preset: PresetLarge}, Limits{16, 64000, 32000, 4096, 60 * time.Second}},
		{"partial object on medium", Object{MaxOutputTokens: ptr(2048)}, Limits{8, 32000, 16000, 2048, 30 * time.Second}},
		{"zero kept", Object{Preset: PresetSmall, MaxCalls: ptr(0)}, Limits{0, 8000, 4000, 512, 15 * time.Second}},
		{"unlimited kept", Object{Preset: PresetLarge, MaxInputChars: ptr(Unlimited), CallTimeoutMs: ptr(Unlimited)}, Limits{16, Unlimited, 32000, 4096, Unlimited}},
		{"exact timeout", Object{CallTimeoutMs: ptr(1500)}, Limits{8, 32000, 16000, 1024, 1500 * time.Millisecond}},
	} {
		if got := Resolve(tc.o); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if _, err := Preset(0).Parse("huge"); err == nil || err.Error() != `must be small, medium or large, got "huge"` {
		t.Errorf("an unknown preset: %v", err)
	}
}

func roles(msgs []wire.Message) string {
	var s []string
	for _, m := range msgs {
		s = append(s, m.Role)
	}
	return strings.Join(s, ",")
}

// maxInputChars: exactly at the limit passes, one over is refused or
// trimmed by whole oldest turns, keeping system messages and the latest
// user turn.
func TestTrim(t *testing.T) {
	msgs := wiretest.Messages(t, `[{"role":"system","content":"ssss"},{"role":"user","content":"aaaa"},{"role":"assistant","content":"bbbb"},`+
		`{"role":"user","content":"cccc"},{"role":"assistant","content":"","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"}}]},`+
		`{"role":"tool","tool_call_id":"x","content":"dd"},{"role":"user","content":"eeee"}]`)
	total := InputChars(msgs, nil) // 4+4+4+4 + 1 (the call's name) + 2 (its arguments) + 2+4 = 25
	if total != 25 {
		t.Fatalf("InputChars = %d", total)
	}
	if out, _, err := Trim(msgs, nil, 0, 25, false); err != nil || len(out) != len(msgs) {
		t.Errorf("at the limit: %v", err)
	}
	var le *LimitError
	if _, _, err := Trim(msgs, nil, 0, 24, false); !errors.As(err, &le) || le.Max != 24 || le.Got != 25 {
		t.Errorf("one over, refuse: %v", err)
	}
	out, rep, err := Trim(msgs, nil, 0, 24, true)
	if err != nil || roles(out) != "system,user,assistant,tool,user" || rep.Removed != 2 {
		t.Errorf("one over, trim: %s %+v %v", roles(out), rep, err)
	}
	out, _, err = Trim(msgs, nil, 0, 8, true)
	if err != nil || roles(out) != "system,user" {
		t.Errorf("trim to the latest turn: %s %v", roles(out), err)
	}
	if _, _, err := Trim(msgs, nil, 0, 7, true); !errors.As(err, &le) {
		t.Errorf("cannot fit: %v", err)
	}
	// The rest of the request's text counts and stays.
	if _, _, err := Trim(msgs, nil, 20, 27, true); !errors.As(err, &le) || le.Got != 28 {
		t.Errorf("with 20 characters of tools, trimmed to 8 + 20: %v", err)
	}
}

// maxOutputTokens clamps what the request asks, injects the upstream's
// field when it asks nothing, and leaves a smaller value alone.
func TestClampOutput(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{`,"max_tokens":5000`, `"max_tokens":1024`},
		{`,"max_completion_tokens":100`, `"max_completion_tokens":100`},
		{`,"max_tokens":1024`, `"max_tokens":1024`},
		{``, `"max_completion_tokens":1024`},
	} {
		r, _ := wire.DecodeRequest([]byte(`{"model":"m","messages":[{"role":"user"}]` + tc.extra + `}`))
		ClampOutput(r, 1024, "max_completion_tokens")
		b, _ := r.Encode("m")
		if !strings.Contains(string(b), tc.want) || strings.Count(string(b), "max_") != 1 {
			t.Errorf("%s: %s", tc.extra, b)
		}
	}
}

// The stricter value of two budgets wins, limit by limit.
func TestStricter(t *testing.T) {
	a := Limits{MaxCalls: 2, MaxInputChars: Unlimited, MaxOutputChars: 100, MaxOutputTokens: 0, CallTimeout: time.Second}
	b := Limits{MaxCalls: 5, MaxInputChars: 10, MaxOutputChars: Unlimited, MaxOutputTokens: 50, CallTimeout: Unlimited}
	want := Limits{MaxCalls: 2, MaxInputChars: 10, MaxOutputChars: 100, MaxOutputTokens: 0, CallTimeout: time.Second}
	if diff := cmp.Diff(want, Stricter(a, b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// keysSeen is a state.Store that records the counter names admission asks for.
type keysSeen struct {
	state.Store
	keys []string
}

func (s *keysSeen) Admit(ctx context.Context, checks []state.Check, counts []state.Count) (int, error) {
	for _, c := range checks {
		s.keys = append(s.keys, c.Key)
	}
	return s.Store.Admit(ctx, checks, counts)
}

// A session id becomes a counter name only as a hash, under its client
// key: a 9 MB id costs the store a few dozen bytes, and two keys' equal
// ids are two sessions.
func TestSessionCounterNames(t *testing.T) {
	s := &keysSeen{Store: state.NewMemoryCounters(0, nil)}
	huge := strings.Repeat("s", 9<<20)
	for _, key := range []string{"a", "b"} {
		if _, err := Admit(context.Background(), s, Admission{Key: key, Session: huge, MaxCalls: 1, Window: time.Hour}); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if len(s.keys) != 2 || s.keys[0] == s.keys[1] || len(s.keys[0]) > 64 || strings.Contains(s.keys[0], "sss") {
		t.Errorf("counter names %.100q", s.keys)
	}
}

// An admission that only checks counts nothing: a key below its rate
// passes as often as it is checked, and one at it is refused with the
// rate that refused it.
func TestAdmitCheckOnly(t *testing.T) {
	ctx := context.Background()
	s := state.NewMemoryCounters(0, nil)
	a := Admission{Key: "k", MaxCalls: Unlimited, RequestsPerMinute: 1, Check: true}
	for range 3 {
		if _, err := Admit(ctx, s, a); err != nil {
			t.Fatalf("a check below the rate: %v", err)
		}
	}
	a.Check = false
	if _, err := Admit(ctx, s, a); err != nil {
		t.Fatalf("the counted admission after the checks: %v", err)
	}
	a.Check = true
	if got, err := Admit(ctx, s, a); err == nil || len(got.Rates()) != 1 || got.Rates()[0].Used != 1 {
		t.Fatalf("a check at the rate: %v %+v", err, got.Rates())
	}
}

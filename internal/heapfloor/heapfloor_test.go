package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// The percent puts the goal (live × (1 + percent/100), and Go's 4 MB
// minimum scaled by percent/100) at the floor, and is 100 once twice the
// live heap reaches it.
func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 16 * mb, 400},       // nothing live: the most the minimum allows
		{1 * mb, 16 * mb, 400},  // 1 MB × 16 would overshoot; 4 MB × 4 = 16 MB
		{4 * mb, 16 * mb, 300},  // 4 + 12 = 16
		{7 * mb, 16 * mb, 128},  // 7 + 9 = 16
		{8 * mb, 16 * mb, 100},  // twice live is the floor
		{40 * mb, 16 * mb, 100}, // a large heap: Go's own pace
		{1 * mb, 4 * mb, 100},   // a floor at Go's minimum changes nothing
		{1 * mb, 2 * mb, 100},
		{1 * mb, Default, 200}, // the gateway's floor: 4 MB × 2
		{3 * mb, Default, 166},
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MB, %d MB) = %d, want %d", c.live/mb, c.floor/mb, got, c.want)
		}
		if p := Percent(c.live, c.floor); p > 100 {
			goal := max(c.live*uint64(100+p)/100, 4*mb*uint64(p)/100)
			if goal > c.floor {
				t.Errorf("Percent(%d, %d) = %d sets a goal of %d, above the floor", c.live, c.floor, p, goal)
			}
		}
	}
}

// With the floor, allocating 256 MB of short-lived garbage over a small
// live heap takes far fewer collections than without; after stop, GOGC
// is 100 again.
func TestFloorCollectsLess(t *testing.T) {
	if p := debug.SetGCPercent(100); p != 100 {
		defer debug.SetGCPercent(p)
	}
	without := cycles(churn)
	stop := Start(16 << 20)
	with := cycles(churn)
	stop()
	t.Logf("collections for 256 MB of garbage: %d at Go's pace, %d with a 16 MB floor", without, with)
	// Four times fewer in theory (a 16 MB goal against 4 MB); at most half
	// leaves room for a busy machine's late collections.
	if with*2 > without {
		t.Errorf("with the floor %d collections, without %d: want at most half", with, without)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after stop GOGC is %d, want 100", p)
	}
}

// The floor starts unless GOGC is set; it sets GOGC at once, for the
// live heap the process starts with.
func TestFromEnv(t *testing.T) {
	if p := debug.SetGCPercent(100); p != 100 {
		defer debug.SetGCPercent(p)
	}
	env := func(v string) func(string) string {
		return func(k string) string { return map[string]string{"GOGC": v}[k] }
	}
	stop := FromEnv(env("50"), 16<<20)
	if p := gogc(); p != 100 {
		t.Errorf("with GOGC set the floor changed GOGC to %d", p)
	}
	stop()
	// The live heap the floor reads is the last collection's: collect now,
	// so that it is this test's small heap and not what an earlier test's
	// churn had allocated while a collection ran (on a busy machine, with
	// long collections, that read as 8 MB or more: GOGC 100).
	runtime.GC()
	stop = FromEnv(env(""), 16<<20)
	if p := gogc(); p <= 100 {
		t.Errorf("with GOGC unset and a small heap, GOGC is %d: the floor did not start", p)
	}
	stop()
	if p := gogc(); p != 100 {
		t.Errorf("after stop GOGC is %d, want 100", p)
	}
}

// gogc reads the collector's current GOGC.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

var sink []byte

// churn allocates 256 MB, 64 KB at a time, keeping none of it.
func churn() {
	for range 4096 {
		sink = make([]byte, 64<<10)
	}
	sink = nil
}

// cycles returns how many collections f caused, starting from a fresh
// one (whose finalizers have run).
func cycles(f func()) uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	f()
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

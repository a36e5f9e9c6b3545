// Package wait is how toolgate's tests wait for something the code under
// test does on its own time (a record written after a response, a gauge
// that moves, a reload that takes effect, a goroutine that ends): they
// poll a condition until it holds, for up to Patience.
//
// Patience is generous on purpose. A test never asserts how long
// something took — durations, rates and CPU ratios are what the
// benchmarks report — so the only cost of a long patience is how long a
// failing test takes to say so; a passing test stops waiting the moment
// the condition holds, however slow or busy the machine is.
package wait

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Patience is the longest a test waits for a condition that should come
// true: long enough for a machine several times slower than a developer's
// laptop, under -race, beside other work.
const Patience = 60 * time.Second

// For polls cond until it reports true, failing the test (naming what it
// waited for) when it has not after Patience. It polls every millisecond
// at first, backing off to every 50 milliseconds.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Until(Patience, cond) {
		t.Fatalf("waited %v for %s", Patience, what)
	}
}

// Until polls cond until it reports true or d has passed, and reports
// whether it did.
func Until(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause) // polling, with a deadline
		pause = min(2*pause, 50*time.Millisecond)
	}
	return true
}

// NoLeaks waits for every goroutine that opts do not ignore to end,
// failing the test with goleak's report of those left after Patience. A
// test that starts with ignore := goleak.IgnoreCurrent() and ends with
// NoLeaks(t, ignore) checks that it left nothing running.
func NoLeaks(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	if !Until(Patience, func() bool { return goleak.Find(opts...) == nil }) {
		t.Errorf("goroutines left behind: %v", goleak.Find(opts...))
	}
}

package maxprocs

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A sample at or over Raise on one P restores the default at once; at the
// default, only Calm samples in a row at or under Lower go back to one P,
// and a busier one starts the count again.
func TestNext(t *testing.T) {
	p := Policy{Raise: 0.6, Lower: 0.3, Calm: 3}
	one, def := state{one: true}, state{}
	for _, c := range []struct {
		name string
		from state
		used float64
		want state
	}{
		{"one P, busy", one, 0.6, def},
		{"one P, very busy", one, 1.9, def},
		{"one P, in the band", one, 0.59, one},
		{"one P, idle", one, 0, one},
		{"default, calm", def, 0.3, state{calm: 1}},
		{"default, calm again", state{calm: 1}, 0.1, state{calm: 2}},
		{"default, calm long enough", state{calm: 2}, 0, one},
		{"default, in the band: the count starts again", state{calm: 2}, 0.31, def},
		{"default, busy", state{calm: 1}, 1.5, def},
	} {
		if got := p.next(c.from, c.used); got != c.want {
			t.Errorf("%s: next(%+v, %v) = %+v, want %+v", c.name, c.from, c.used, got, c.want)
		}
	}
}

// The process goes to one P while idle, back to the default while a
// goroutine burns CPU, to one P again once it stops, and stop leaves the
// default. The thresholds are low so that a busy machine, which gives the
// burning goroutine less than a core, still shows the switch.
func TestFollowsLoad(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	if def < 2 {
		t.Skipf("the default is %d P: nothing to switch", def)
	}
	stop := Start(Policy{Every: 10 * time.Millisecond, Raise: 0.25, Lower: 0.1, Calm: 5})
	waitProcs(t, 1, "while idle")

	var burning atomic.Bool
	burning.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for burning.Load() { // burn CPU until told to stop
		}
	}()
	waitProcs(t, def, "while a goroutine burns CPU")
	burning.Store(false)
	<-done
	waitProcs(t, 1, "once it stopped")

	stop()
	if n := runtime.GOMAXPROCS(0); n != def {
		t.Errorf("after stop GOMAXPROCS is %d, want the default %d", n, def)
	}
}

// A process started with GOMAXPROCS set keeps what it was given.
func TestFromEnvLeavesASetting(t *testing.T) {
	def := runtime.GOMAXPROCS(0)
	if def < 2 {
		t.Skipf("the default is %d P: nothing to switch", def)
	}
	getenv := func(k string) string {
		if k == "GOMAXPROCS" {
			return "2"
		}
		return ""
	}
	stop := FromEnv(getenv, Policy{Every: time.Millisecond, Raise: 0.6, Lower: 0.3, Calm: 1})
	defer stop()
	time.Sleep(100 * time.Millisecond)
	if n := runtime.GOMAXPROCS(0); n != def {
		t.Errorf("GOMAXPROCS is %d with the variable set, want %d untouched", n, def)
	}
}

// waitProcs waits, five seconds at most, for GOMAXPROCS to be n.
func waitProcs(t *testing.T, n int, when string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOMAXPROCS is %d after 5 s, want %d", when, runtime.GOMAXPROCS(0), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkSwitch measures one switch to one P and back: the price of the
// controller's changes of mind (each stops the world).
func BenchmarkSwitch(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("one P: nothing to switch")
	}
	b.ReportAllocs()
	for b.Loop() {
		runtime.GOMAXPROCS(1)
		runtime.SetDefaultGOMAXPROCS()
	}
}

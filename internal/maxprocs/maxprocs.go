// Package maxprocs runs the gateway's goroutines on one processor while
// it is lightly loaded, and on as many as the Go runtime would give it
// once its load calls for more.
//
// With two or more Ps, Go keeps a thread spinning in search of work each
// time a goroutine wakes while another P is idle, and a request's
// goroutines (the connection's, the upstream transport's) are handed
// between threads on different cores. At the rates a sidecar gateway
// mostly sees, a few hundred requests a second, that is a large part of
// its CPU: on the 2-core benchmark machine, the same build on one P
// spent a fifth to a quarter less CPU per request at every open-loop
// rate, and its added latency fell as well (docs/performance.md). One P
// cannot use a second core, though: at saturation it served a fifth
// fewer streams a second.
//
// Start samples the process's CPU time (user and system, every thread)
// every Policy.Every. On one P, a sample at or above Policy.Raise (CPU
// seconds per wall-clock second) gives the runtime its default back at
// once (runtime.SetDefaultGOMAXPROCS: the container-aware default, which
// keeps following the CPU limit); at the default, Policy.Calm samples in
// a row at or under Policy.Lower go back to one P. The band between the
// two keeps it from switching back and forth; each switch stops the world
// (BenchmarkSwitch: about 55 µs for one there and back, on an idle
// 2-core machine). A burst that finds the gateway on one P runs
// there for about one interval (the sampling goroutine waits its turn on
// the busy P) before the default is back.
//
// A process started with GOMAXPROCS set is left to it (FromEnv), and so
// is one whose default is a single P already.
package maxprocs

import (
	"runtime"
	"time"
)

// Policy says when the gateway runs on one P.
type Policy struct {
	// Every is how often the process's CPU time is read.
	Every time.Duration
	// Raise: on one P, a sample of at least this much CPU per second
	// (1 is a whole core) restores the default.
	Raise float64
	// Lower and Calm: at the default, Calm samples in a row of at most
	// Lower CPU per second go back to one P.
	Lower float64
	Calm  int
}

// Default is the gateway's policy: a sample every 100 ms; the default
// back once one P is 60% busy; one P again after two seconds under 30%
// of a core.
var Default = Policy{Every: 100 * time.Millisecond, Raise: 0.6, Lower: 0.3, Calm: 20}

// state is where the controller is: on one P or at the default, and how
// many calm samples in a row it has seen there.
type state struct {
	one  bool
	calm int
}

// next is the state after a sample of used CPU seconds per second.
func (p Policy) next(s state, used float64) state {
	switch {
	case s.one && used >= p.Raise:
		return state{}
	case s.one:
		return s
	case used > p.Lower:
		return state{}
	case s.calm+1 >= p.Calm:
		return state{one: true}
	}
	return state{calm: s.calm + 1}
}

// Start runs the policy until stop is called; stop gives the runtime its
// default back. It does nothing where the process's CPU time cannot be
// read or the default is one P already.
func Start(p Policy) (stop func()) {
	if runtime.GOMAXPROCS(0) <= 1 || p.Every <= 0 {
		return func() {}
	}
	if _, ok := cpuTime(); !ok {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(p.Every)
		defer t.Stop()
		var s state
		cpu, _ := cpuTime()
		wall := time.Now()
		for {
			select {
			case <-done:
				if s.one {
					runtime.SetDefaultGOMAXPROCS()
				}
				return
			case <-t.C:
				// Read the clock with the CPU time, not at the tick: a
				// sample taken late (its P busy) still divides by its own
				// interval.
				c, _ := cpuTime()
				now := time.Now()
				n := p.next(s, (c-cpu).Seconds()/now.Sub(wall).Seconds())
				switch {
				case n.one && !s.one:
					runtime.GOMAXPROCS(1)
				case !n.one && s.one:
					runtime.SetDefaultGOMAXPROCS()
				}
				s, cpu, wall = n, c, now
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// FromEnv starts the policy unless getenv("GOMAXPROCS") is set: whoever
// set it chose the number of Ps.
func FromEnv(getenv func(string) string, p Policy) (stop func()) {
	if getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	return Start(p)
}

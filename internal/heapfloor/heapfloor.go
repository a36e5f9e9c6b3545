// Package heapfloor keeps the garbage collector from collecting a small
// heap more often than a floor calls for.
//
// Go starts a collection once the heap has grown by GOGC percent (100)
// over what the last one left live, and at 4 MB at the least. A gateway
// keeps little live — a megabyte or two between requests — but parses
// every request whole: a 100-message transcript allocates about 130 KB
// on its way through, and at 200 such requests a second the gateway
// collected 20 times a second (GODEBUG=gctrace=1).
//
// Start holds the next collection's goal at the floor at the least: after
// each collection it sets GOGC so that the goal is the floor while the
// live heap is under half of it, and gives GOGC its default back once it
// is not, so a large live heap is collected just as Go would collect it.
// The goal is then about max(floor, 2 × live). GOMEMLIMIT, when set,
// still bounds the whole; a process started with GOGC set is left to it
// (FromEnv).
//
// The floor's size was measured (docs/performance.md): 8 MB took a
// fifth of the CPU off a transcript request and left streams as they
// were; 16 MB took as much off transcripts but made 50-chunk streams
// cost 10–15% more (the larger working set, presumably, outgrowing the
// caches; that part was not measured).
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Default is the floor the gateway runs with: the goal GOGC=200 gives a
// heap of 4 MB or less.
const Default = 8 << 20

// minimumHeap is Go's smallest heap goal at GOGC=100; it scales with
// GOGC, so a percent above floor/minimumHeap × 100 would set a goal
// above the floor however small the live heap.
const minimumHeap = 4 << 20

// Percent is the GOGC that puts the goal after a collection that left
// live bytes live at floor, or 100 when twice live is already there.
func Percent(live, floor uint64) int {
	ceiling := int(floor * 100 / minimumHeap)
	if live*2 >= floor || ceiling <= 100 {
		return 100
	}
	if live == 0 {
		return ceiling
	}
	return max(100, min(ceiling, int((floor-live)*100/live)))
}

// floor is one started floor: its size, and under mu whether it was
// stopped and the percent it last set (Start sets the first, the
// finalizer goroutine the others; stop must not be undone by an
// adjustment already under way).
type floor struct {
	bytes   uint64
	mu      sync.Mutex
	stopped bool
	last    int
	sample  []metrics.Sample
}

// sentinel is an object whose finalizer runs once after each collection
// (it holds a pointer, so the tiny allocator never batches it).
type sentinel struct {
	_ *byte
	_ [8]byte
}

// Start keeps the heap goal at floor bytes at the least until stop is
// called; stop gives GOGC its default back.
func Start(bytes uint64) (stop func()) {
	f := &floor{bytes: bytes, last: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.adjust() // before the first collection: the live heap is the start's
	f.arm()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.stopped {
			f.stopped = true
			debug.SetGCPercent(100)
		}
	}
}

// FromEnv starts the floor unless getenv("GOGC") is set: whoever set it
// chose the collector's pace.
func FromEnv(getenv func(string) string, bytes uint64) (stop func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	return Start(bytes)
}

// arm sets a sentinel for the next collection to find.
func (f *floor) arm() {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		if f.adjust() {
			f.arm()
		}
	})
}

// adjust sets GOGC for the live heap the last collection left; false
// once the floor is stopped.
func (f *floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.sample)
	var live uint64
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		live = f.sample[0].Value.Uint64()
	}
	if p := Percent(live, f.bytes); p != f.last {
		debug.SetGCPercent(p)
		f.last = p
	}
	return true
}

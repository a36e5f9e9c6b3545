package state

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/enum"
)

// A Check is one counter an admission consults: the counter named Key
// counts in fixed windows of Window (a window starts with the counter's
// first use) and may reach Limit.
type Check struct {
	Key    string
	Limit  int64
	Window time.Duration
	// Cost is what admission adds. A cost of 0 only checks: the counter
	// must still be below Limit (tokens, counted once a response reports
	// them, are checked this way).
	Cost int64
}

// Count is a counter's state once an admission ran.
type Count struct {
	Used  int64         // the counter's value, the admitted cost included
	Reset time.Duration // time until the window ends
}

// room reports whether a counter at used may take c: used plus the cost
// (at least 1) must not pass the limit.
func (c Check) room(used int64) bool {
	return used+max(c.Cost, 1) <= c.Limit
}

// OnError is what a request does when the counter store cannot be
// reached (state.on_error).
type OnError uint8

// The choices.
const (
	FailOpen   OnError = iota // admitted uncounted (the default)
	FailClosed                // refused with 503
)

var onErrorNames = []string{"fail_open", "fail_closed"}

func (o OnError) String() string { return onErrorNames[o] }

// Names are the configured names of the choices.
func (OnError) Names() []string { return slices.Clone(onErrorNames) }

// Parse reads a configured choice: fail_open or fail_closed.
func (OnError) Parse(s string) (OnError, error) { return enum.Parse[OnError](onErrorNames, s) }

// Store holds the counters admission consults: MemoryCounters by default, RedisStore
// when replicas share them. Implementations are safe for concurrent use.
type Store interface {
	// Admit checks every counter and, only if each has room, adds each
	// Cost: all or nothing, atomically. When it admits, counts gets one
	// Count per check (len(counts) >= len(checks)); when it refuses,
	// refused is the index of the first check without room and only
	// counts[refused] is set (it tells when that counter resets).
	// refused is -1 when admitted.
	Admit(ctx context.Context, checks []Check, counts []Count) (refused int, err error)
	// Add adds n to a counter whose windows last window.
	Add(ctx context.Context, key string, n int64, window time.Duration) error
}

// MemoryCounters is the in-process Store. It holds at most max counters (expired
// windows are dropped first), so a flood of session ids cannot grow it.
type MemoryCounters struct {
	mu  sync.Mutex
	now func() time.Time
	max int
	m   map[string]*window
}

type window struct {
	start time.Time
	len   time.Duration
	n     int64
}

// NewMemoryCounters returns a memory store for at most max counters (0 means
// 100,000); now is the clock (nil means time.Now).
func NewMemoryCounters(max int, now func() time.Time) *MemoryCounters {
	if max <= 0 {
		max = 100000
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryCounters{now: now, max: max, m: map[string]*window{}}
}

// Admit implements Store.
func (s *MemoryCounters) Admit(_ context.Context, checks []Check, counts []Count) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	refused := -1
	for i, c := range checks {
		w := s.current(c.Key, c.Window, now)
		counts[i] = Count{Used: w.n, Reset: w.start.Add(w.len).Sub(now)}
		if refused < 0 && !c.room(w.n) {
			refused = i
		}
	}
	if refused >= 0 {
		return refused, nil
	}
	for i, c := range checks {
		w := s.m[c.Key]
		w.n += c.Cost
		counts[i].Used = w.n
	}
	return -1, nil
}

// Add implements Store.
func (s *MemoryCounters) Add(_ context.Context, key string, n int64, window time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current(key, window, s.now()).n += n
	return nil
}

// current returns key's window at now, starting a fresh one when there is
// none or it has ended.
func (s *MemoryCounters) current(key string, length time.Duration, now time.Time) *window {
	w, found := s.m[key]
	if found && now.Sub(w.start) < w.len {
		return w
	}
	if !found && len(s.m) >= s.max {
		s.sweep(now)
	}
	w = &window{start: now, len: length}
	s.m[key] = w
	return w
}

// sweep drops ended windows, and if that frees nothing, every window: the
// store stays bounded.
func (s *MemoryCounters) sweep(now time.Time) {
	for k, w := range s.m {
		if now.Sub(w.start) >= w.len {
			delete(s.m, k)
		}
	}
	if len(s.m) >= s.max {
		clear(s.m)
	}
}

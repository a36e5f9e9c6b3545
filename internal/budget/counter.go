package budget

import (
	"sync"
	"time"
)

// Counter counts model calls per session in fixed windows. This is the
// memory implementation; it is safe for concurrent use and holds at most
// max sessions (expired windows are dropped first).
type Counter struct {
	mu  sync.Mutex
	now func() time.Time
	max int
	m   map[string]*window
}

type window struct {
	start time.Time
	n     int
}

// NewCounter returns a memory counter for at most max sessions (0 means
// 100,000); now is the clock (nil means time.Now).
func NewCounter(max int, now func() time.Time) *Counter {
	if max <= 0 {
		max = 100000
	}
	if now == nil {
		now = time.Now
	}
	return &Counter{now: now, max: max, m: map[string]*window{}}
}

// Take counts one call for session within a window of length w, if fewer
// than limit were made in it. When it refuses, retryAfter is the time until
// the window ends. A limit of Unlimited always allows.
func (c *Counter) Take(session string, limit int, w time.Duration) (ok bool, retryAfter time.Duration) {
	if limit == Unlimited {
		return true, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	win, found := c.m[session]
	if !found || now.Sub(win.start) >= w {
		if !found && len(c.m) >= c.max {
			c.sweep(now, w)
		}
		win = &window{start: now}
		c.m[session] = win
	}
	if win.n >= limit {
		return false, win.start.Add(w).Sub(now)
	}
	win.n++
	return true, 0
}

// sweep drops expired windows, and if none expired, every window: the
// counter stays bounded.
func (c *Counter) sweep(now time.Time, w time.Duration) {
	for k, win := range c.m {
		if now.Sub(win.start) >= w {
			delete(c.m, k)
		}
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
}

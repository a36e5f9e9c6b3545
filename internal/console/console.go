// Package console is the gateway's live console: a read-only page on the
// admin listener (/ui/), embedded in the binary, and the small JSON API
// behind it (/ui/api/…), updated live over server-sent events (go-sse's
// server side). It shows what the gateway is doing — its upstreams and
// their cooldowns, its routes as resolved, its keys against their limits
// — and what no other gateway shows: what it fixed on the wire, in
// totals (repairs by action, normalizations by quirk, reasoning restored)
// and request by request, in the inspector (which message and call ids
// repair sealed, dropped or moved, as an outline of roles and ids before
// and after; the quirks normalized in the answer; the attempts made).
//
// A [Console] outlives reloads: the process makes one and hands it to
// each gateway it builds, which adds every request's record to it
// ([Console.Add]: a copy of the record's outline into a bounded ring,
// never message content, and a non-blocking hand-off to the live feed).
// What the console shows of the configuration comes from the live
// gateway ([Source]) when asked. Nothing secret is shown: neither keys
// nor their hashes, nor upstream keys or URLs' credentials.
package console

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/toolgate/toolgate/internal/observe"
)

// Options configure a Console.
type Options struct {
	// Recent is how many requests the ring keeps (0: none).
	Recent int
	// Token, when set, is asked of every API request.
	Token string
	// Version is the gateway's version.
	Version string
}

// Console is the live console. Its methods are safe for concurrent use
// and a nil *Console does nothing.
type Console struct {
	opts    Options
	started time.Time

	mu   sync.Mutex
	ring []Entry // at most opts.Recent, oldest overwritten first
	next int     // where the next entry goes
	seq  atomic.Uint64
	// perSecond counts requests by the second they ended, over the last
	// minute: the overview's rate.
	perSecond [60]struct {
		at int64
		n  int
	}
	loaded Loaded

	server   *sse.Server
	feed     chan []byte // entries for the live feed; full: dropped
	watchers atomic.Int64
	dropped  atomic.Int64
	done     chan struct{}
	wg       sync.WaitGroup
}

// Loaded is the configuration the gateway serves: its file, when it was
// loaded, and the last reload's error ("" when it succeeded).
type Loaded struct {
	File       string    `json:"file"`
	At         time.Time `json:"at,omitzero"`
	LastReload string    `json:"last_reload_error,omitempty"`
}

// feedSize is how many entries wait for the live feed before new ones are
// dropped (the ring keeps them all the same).
const feedSize = 256

// New returns a Console; Close releases its live feed.
func New(opts Options) *Console {
	c := &Console{opts: opts, started: time.Now(), ring: make([]Entry, 0, opts.Recent),
		feed: make(chan []byte, feedSize), done: make(chan struct{})}
	c.server = &sse.Server{OnSession: c.session}
	c.wg.Add(1)
	go c.publish()
	return c
}

// Close ends the live feed and its sessions.
func (c *Console) Close() {
	if c == nil {
		return
	}
	close(c.done)
	c.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.server.Shutdown(ctx)
}

// publish hands each entry of the feed to the watching sessions: a slow
// one holds up this goroutine, never a request.
func (c *Console) publish() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case b := <-c.feed:
			m := &sse.Message{Type: sse.Type("request")}
			m.AppendData(string(b))
			_ = c.server.Publish(m)
		}
	}
}

// SetLoaded records the configuration the gateway serves (after a load
// or a reload; err is a failed reload's, and keeps the file and time of
// the configuration still served).
func (c *Console) SetLoaded(file string, err error) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.loaded.LastReload = err.Error()
		return
	}
	c.loaded = Loaded{File: file, At: time.Now()}
}

// Add keeps a finished request's record: its outline in the ring, and on
// the live feed when someone watches. It copies what it keeps, outside
// the ring's lock: requests ending together wait on each other for a
// slot, not for each other's copies.
func (c *Console) Add(rec *observe.Record) {
	if c == nil {
		return
	}
	now := time.Now()
	watched := c.watchers.Load() > 0
	seq := c.seq.Add(1)
	var e Entry
	keep := c.opts.Recent > 0 || watched
	if keep {
		e = entryOf(rec, seq)
	}
	c.mu.Lock()
	slot := &c.perSecond[now.Unix()%60]
	if slot.at != now.Unix() {
		slot.at, slot.n = now.Unix(), 0
	}
	slot.n++
	if c.opts.Recent > 0 {
		if len(c.ring) < c.opts.Recent {
			c.ring = append(c.ring, e)
		} else {
			c.ring[c.next] = e
		}
		c.next = (c.next + 1) % c.opts.Recent
	}
	c.mu.Unlock()
	if !watched {
		return
	}
	b, _ := json.Marshal(e)
	select {
	case c.feed <- b:
	default:
		c.dropped.Add(1)
	}
}

// recent returns the kept entries, newest first.
func (c *Console) recent() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Entry, 0, len(c.ring))
	for k := 1; k <= len(c.ring); k++ {
		out = append(out, c.ring[(c.next-k+len(c.ring))%len(c.ring)])
	}
	return out
}

// rate is the requests per second over the last minute.
func (c *Console) rate(now time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.perSecond {
		if now.Unix()-s.at < 60 {
			n += s.n
		}
	}
	return float64(n) / 60
}

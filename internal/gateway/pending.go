package gateway

import (
	"container/list"
	"context"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
)

// Pending bounds the connections that have not finished sending their
// request: in all (server.max_pending_requests), per client address
// (server.max_pending_per_ip, addresses grouped by the IPv4 and IPv6
// prefix lengths: a host with a /64 is one client), and those not yet
// known to carry a client key (server.max_pending_keyless). A connection
// is pending from its accept until its first request has been received
// whole, and again for each later request it carries, from the handler's
// start until that request's body is in; it is keyless until the handler
// has checked its key.
//
// Beyond the global or the per-address cap, a new connection is closed at
// once (it has cost only its accept), and a keep-alive connection's next
// request is answered 503 without its body being read. Beyond the keyless
// cap, a keyless connection is closed to make room instead: the oldest of
// the address group that holds the most of them. A flood of connections
// that never send their headers (they cannot be told from a keyed
// client's before they do) makes room from its own share, however fast it
// reconnects, and a keyed client from another address, whose headers
// follow its connection at once, is never locked out by it. The header phase itself is bounded by
// server.read_header_timeout, the body by server.read_body_timeout.
//
// Pending outlives the gateways a reload swaps: it belongs to the server
// ([NewServer]). A nil *Pending bounds nothing. It is safe for concurrent
// use.
type Pending struct {
	mu         sync.Mutex
	max, perIP int
	maxKeyless int
	v4, v6     int // prefix lengths grouping client addresses
	all        int
	byIP       map[string]int
	keyless    keylessGroups
	conns      map[net.Conn]*pendingConn
	metrics    *observe.Metrics
}

// pendingConn is one connection's state, shared by its ConnState calls
// and its requests' handlers (through the request's context).
type pendingConn struct {
	conn    net.Conn
	ip      string // its address group
	pending bool
	// keyless is its element in its address group's keyless list while
	// it is pending and its key has not been checked; nil otherwise.
	keyless *list.Element
}

type pendingKey struct{}

// NewPending returns the guard for s's caps.
func NewPending(s config.Server, m *observe.Metrics) *Pending {
	return &Pending{max: s.MaxPendingRequests, perIP: s.MaxPendingPerIP, maxKeyless: s.MaxPendingKeyless,
		v4: s.PendingIPv4Prefix, v6: s.PendingIPv6Prefix,
		byIP: map[string]int{}, keyless: keylessGroups{byName: map[string]*keylessGroup{}}, conns: map[net.Conn]*pendingConn{}, metrics: m}
}

// NewServer returns the main listener's server for h: the header and idle
// timeouts of s and, with p, the pending-request caps. It has no
// WriteTimeout: that would cut long streams; each stream write gets its
// own deadline instead.
func NewServer(s config.Server, h http.Handler, p *Pending, errLog *log.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		IdleTimeout:       s.IdleTimeout,
		ErrorLog:          errLog,
	}
	if p != nil {
		srv.ConnContext, srv.ConnState = p.connContext, p.connState
	}
	return srv
}

// connContext records a new connection; the request contexts carry its
// state so that the handler can find it.
func (p *Pending) connContext(ctx context.Context, c net.Conn) context.Context {
	pc := &pendingConn{conn: c, ip: addressGroup(c.RemoteAddr(), p.v4, p.v6)}
	p.mu.Lock()
	p.conns[c] = pc
	p.mu.Unlock()
	return context.WithValue(ctx, pendingKey{}, pc)
}

func (p *Pending) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	pc := p.conns[c]
	var refused string
	var evicted net.Conn
	switch s {
	case http.StateNew:
		refused, evicted = p.acquireLocked(pc)
	case http.StateIdle:
		p.releaseLocked(pc)
	case http.StateHijacked, http.StateClosed:
		p.releaseLocked(pc)
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.closeEvicted(evicted)
	if refused != "" {
		p.metrics.PendingRefused(refused)
		c.Close()
	}
}

// begin marks r's connection pending (keyless) for a request that follows
// another on it; it reports false, counting the refusal, when a cap is
// reached.
func (p *Pending) begin(r *http.Request) bool {
	pc, ok := r.Context().Value(pendingKey{}).(*pendingConn)
	if p == nil || !ok {
		return true
	}
	p.mu.Lock()
	refused, evicted := p.acquireLocked(pc)
	p.mu.Unlock()
	p.closeEvicted(evicted)
	if refused != "" {
		p.metrics.PendingRefused(refused)
		return false
	}
	return true
}

// keyed marks r's connection as carrying a checked client key: it leaves
// the keyless share (it stays pending until its body is in).
func (p *Pending) keyed(r *http.Request) {
	pc, ok := r.Context().Value(pendingKey{}).(*pendingConn)
	if p == nil || !ok {
		return
	}
	p.mu.Lock()
	p.keyless.remove(pc)
	p.mu.Unlock()
}

// received marks r's request as received whole.
func (p *Pending) received(r *http.Request) {
	pc, ok := r.Context().Value(pendingKey{}).(*pendingConn)
	if p == nil || !ok {
		return
	}
	p.mu.Lock()
	p.releaseLocked(pc)
	p.mu.Unlock()
}

// acquireLocked makes pc pending (and keyless) unless a cap is reached; it
// returns the cap that refused it ("global" or "ip"), or "", and the
// oldest keyless connection it displaced, to close (outside the lock).
func (p *Pending) acquireLocked(pc *pendingConn) (refused string, evicted net.Conn) {
	if pc == nil || pc.pending {
		return "", nil
	}
	if p.perIP > 0 && p.byIP[pc.ip] >= p.perIP {
		return "ip", nil
	}
	if p.maxKeyless > 0 && p.keyless.n >= p.maxKeyless {
		old := p.keyless.oldestOfLargest()
		p.releaseLocked(old)
		evicted = old.conn
	}
	if p.max > 0 && p.all >= p.max {
		return "global", evicted
	}
	pc.pending = true
	p.all++
	p.byIP[pc.ip]++
	p.keyless.add(pc)
	p.metrics.PendingRequests(p.all)
	return "", evicted
}

func (p *Pending) releaseLocked(pc *pendingConn) {
	if pc == nil || !pc.pending {
		return
	}
	pc.pending = false
	p.keyless.remove(pc)
	p.all--
	if p.byIP[pc.ip]--; p.byIP[pc.ip] == 0 {
		delete(p.byIP, pc.ip)
	}
	p.metrics.PendingRequests(p.all)
}

// closeEvicted closes a keyless connection displaced by a newer one,
// counting it.
func (p *Pending) closeEvicted(c net.Conn) {
	if c != nil {
		p.metrics.PendingRefused("keyless")
		c.Close()
	}
}

// addressGroup is the connection's client address, masked to its group:
// the first v4 bits of an IPv4 address, the first v6 bits of an IPv6 one.
func addressGroup(a net.Addr, v4, v6 int) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	ip := ap.Addr().Unmap()
	bits := v6
	if ip.Is4() {
		bits = v4
	}
	if pfx, err := ip.Prefix(bits); err == nil {
		return pfx.String()
	}
	return ip.String()
}

// keylessGroups are the keyless pending connections by address group,
// the groups in a heap by how many they hold (most first), so that the
// group to make room from is found in O(1) and kept in O(log groups).
type keylessGroups struct {
	byName map[string]*keylessGroup
	heap   []*keylessGroup
	n      int // connections in all
}

type keylessGroup struct {
	name  string
	conns *list.List // of *pendingConn, oldest first
	index int        // in the heap
}

func (k *keylessGroups) add(pc *pendingConn) {
	g := k.byName[pc.ip]
	if g == nil {
		g = &keylessGroup{name: pc.ip, conns: list.New(), index: len(k.heap)}
		k.byName[pc.ip] = g
		k.heap = append(k.heap, g)
	}
	pc.keyless = g.conns.PushBack(pc)
	k.n++
	k.up(g.index)
}

func (k *keylessGroups) remove(pc *pendingConn) {
	if pc.keyless == nil {
		return
	}
	g := k.byName[pc.ip]
	g.conns.Remove(pc.keyless)
	pc.keyless = nil
	k.n--
	if g.conns.Len() > 0 {
		k.down(g.index)
		return
	}
	last := len(k.heap) - 1
	i := g.index
	k.swap(i, last)
	k.heap = k.heap[:last]
	delete(k.byName, g.name)
	if i < last {
		k.down(i)
		k.up(i)
	}
}

// oldestOfLargest is the oldest keyless connection of the group holding
// the most (there is one).
func (k *keylessGroups) oldestOfLargest() *pendingConn {
	return k.heap[0].conns.Front().Value.(*pendingConn)
}

func (k *keylessGroups) less(i, j int) bool { return k.heap[i].conns.Len() > k.heap[j].conns.Len() }

func (k *keylessGroups) swap(i, j int) {
	k.heap[i], k.heap[j] = k.heap[j], k.heap[i]
	k.heap[i].index, k.heap[j].index = i, j
}

func (k *keylessGroups) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !k.less(i, parent) {
			return
		}
		k.swap(i, parent)
		i = parent
	}
}

func (k *keylessGroups) down(i int) {
	for {
		l, r, top := 2*i+1, 2*i+2, i
		if l < len(k.heap) && k.less(l, top) {
			top = l
		}
		if r < len(k.heap) && k.less(r, top) {
			top = r
		}
		if top == i {
			return
		}
		k.swap(i, top)
		i = top
	}
}

package gateway

import (
	"context"
	"log"
	"net"
	"net/http"
	"sync"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/observe"
)

// Pending bounds the connections that have not finished sending their
// request: in all (server.max_pending_requests) and per client IP address
// (server.max_pending_per_ip). A connection is pending from its accept
// until its first request has been received whole, and again for each
// later request it carries, from the handler's start until that request's
// body is in. Beyond a cap, a new connection is closed at once (it has
// cost only its accept), and a keep-alive connection's next request is
// answered 503 without its body being read. The header phase itself is
// bounded by server.read_header_timeout, the body by
// server.read_body_timeout.
//
// Pending outlives the gateways a reload swaps: it belongs to the server
// ([NewServer]). A nil *Pending bounds nothing. It is safe for concurrent
// use.
type Pending struct {
	mu      sync.Mutex
	max     int
	perIP   int
	all     int
	byIP    map[string]int
	conns   map[net.Conn]*pendingConn
	metrics *observe.Metrics
}

// pendingConn is one connection's state, shared by its ConnState calls
// and its requests' handlers (through the request's context).
type pendingConn struct {
	ip      string
	pending bool
}

type pendingKey struct{}

// NewPending returns the guard for s's caps.
func NewPending(s config.Server, m *observe.Metrics) *Pending {
	return &Pending{max: s.MaxPendingRequests, perIP: s.MaxPendingPerIP, byIP: map[string]int{}, conns: map[net.Conn]*pendingConn{}, metrics: m}
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
	pc := &pendingConn{ip: clientIP(c.RemoteAddr())}
	p.mu.Lock()
	p.conns[c] = pc
	p.mu.Unlock()
	return context.WithValue(ctx, pendingKey{}, pc)
}

func (p *Pending) connState(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	pc := p.conns[c]
	refused := ""
	switch s {
	case http.StateNew:
		refused = p.acquireLocked(pc)
	case http.StateIdle:
		p.releaseLocked(pc)
	case http.StateHijacked, http.StateClosed:
		p.releaseLocked(pc)
		delete(p.conns, c)
	}
	p.mu.Unlock()
	if refused != "" {
		p.metrics.PendingRefused(refused)
		c.Close()
	}
}

// begin marks r's connection pending for a request that follows another
// on it; it reports false, counting the refusal, when a cap is reached.
func (p *Pending) begin(r *http.Request) bool {
	pc, ok := r.Context().Value(pendingKey{}).(*pendingConn)
	if p == nil || !ok {
		return true
	}
	p.mu.Lock()
	refused := p.acquireLocked(pc)
	p.mu.Unlock()
	if refused != "" {
		p.metrics.PendingRefused(refused)
		return false
	}
	return true
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

// acquireLocked makes pc pending unless a cap is reached; it returns the
// cap that refused it ("global" or "ip"), or "".
func (p *Pending) acquireLocked(pc *pendingConn) string {
	if pc == nil || pc.pending {
		return ""
	}
	switch {
	case p.max > 0 && p.all >= p.max:
		return "global"
	case p.perIP > 0 && p.byIP[pc.ip] >= p.perIP:
		return "ip"
	}
	pc.pending = true
	p.all++
	p.byIP[pc.ip]++
	p.metrics.PendingRequests(p.all)
	return ""
}

func (p *Pending) releaseLocked(pc *pendingConn) {
	if pc == nil || !pc.pending {
		return
	}
	pc.pending = false
	p.all--
	if p.byIP[pc.ip]--; p.byIP[pc.ip] == 0 {
		delete(p.byIP, pc.ip)
	}
	p.metrics.PendingRequests(p.all)
}

// clientIP is the connection's remote IP address, without its port.
func clientIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

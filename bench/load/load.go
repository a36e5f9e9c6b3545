// Package load is toolgate's load generator: open loop (requests sent at a
// fixed rate whatever the target's latency, latency measured from each
// request's scheduled time so a slow target cannot hide its queueing) and
// closed loop (a fixed number of clients, each sending its next request
// when the last ends), both bounded in time; and held streams (N
// concurrent long streams, for memory per stream).
package load

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one HTTP endpoint under load.
type Target struct {
	URL    string // the chat completions URL
	Body   []byte // the request body
	Stream bool   // the response is SSE: time to first byte is measured
	Header http.Header
}

// Result is what one run measured.
type Result struct {
	Latencies []time.Duration // successful requests, sorted
	TTFB      []time.Duration // streams: to the first body byte, sorted
	Requests  int             // sent
	Errors    int             // transport errors, non-200 statuses, bodies that did not end well
	Elapsed   time.Duration
	FirstErr  string
}

// Rate is the achieved rate of successful requests per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Quantile returns the q-quantile (0..1) of sorted durations; 0 when empty.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[min(i, len(sorted)-1)]
}

// NewClient returns an HTTP client for load: keep-alive connections, up
// to maxConns to the target, no proxy, no timeout but ctx's.
func NewClient(maxConns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// collector gathers the measurements of concurrent requests.
type collector struct {
	mu       sync.Mutex
	res      Result
	requests atomic.Int64
}

func (c *collector) add(lat, ttfb time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.res.Errors++
		if c.res.FirstErr == "" {
			c.res.FirstErr = err.Error()
		}
		return
	}
	c.res.Latencies = append(c.res.Latencies, lat)
	if ttfb > 0 {
		c.res.TTFB = append(c.res.TTFB, ttfb)
	}
}

func (c *collector) result(elapsed time.Duration) Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Requests = int(c.requests.Load())
	r.Elapsed = elapsed
	slices.Sort(r.Latencies)
	slices.Sort(r.TTFB)
	return r
}

// do sends one request and reads the whole response; start is the time the
// latency counts from.
func do(ctx context.Context, client *http.Client, t Target, start time.Time) (lat, ttfb time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(t.Body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range t.Header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return 0, 0, errors.New("status " + resp.Status)
	}
	var buf [16 << 10]byte
	n, err := resp.Body.Read(buf[:])
	if t.Stream && n > 0 {
		ttfb = time.Since(start)
	}
	tail := buf[:n]
	for err == nil {
		n, err = resp.Body.Read(buf[:])
		if n > 0 {
			tail = buf[:n]
		}
	}
	if err != io.EOF {
		return 0, 0, err
	}
	if t.Stream && !bytes.HasSuffix(bytes.TrimRight(tail, "\n"), []byte("[DONE]")) {
		return 0, 0, errors.New("a stream did not end with [DONE]")
	}
	return time.Since(start), ttfb, nil
}

// Open sends requests at rate per second for d, each at its scheduled time
// on its own goroutine, and waits for them all.
func Open(ctx context.Context, client *http.Client, t Target, rate float64, d time.Duration) Result {
	var c collector
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / rate)
	begin := time.Now()
	for i := 0; ; i++ {
		at := begin.Add(time.Duration(i) * interval)
		if at.Sub(begin) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(at); wait > 0 {
			time.Sleep(wait)
		}
		c.requests.Add(1)
		wg.Go(func() {
			lat, ttfb, err := do(ctx, client, t, at)
			c.add(lat, ttfb, err)
		})
	}
	wg.Wait()
	return c.result(time.Since(begin))
}

// Closed runs clients concurrent loops of requests for d.
func Closed(ctx context.Context, client *http.Client, t Target, clients int, d time.Duration) Result {
	var c collector
	var wg sync.WaitGroup
	begin := time.Now()
	deadline := begin.Add(d)
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				c.requests.Add(1)
				start := time.Now()
				lat, ttfb, err := do(ctx, client, t, start)
				c.add(lat, ttfb, err)
			}
		})
	}
	wg.Wait()
	return c.result(time.Since(begin))
}

// Hold opens n streams, at most rampPerSec new ones a second, and calls
// measure once all are open and sending (or after the ramp when some
// failed). It then cancels them and returns how many were open at the
// time of measure and the first error seen.
func Hold(ctx context.Context, client *http.Client, t Target, n, rampPerSec int, measure func(open int)) (open int, firstErr error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		opened atomic.Int64
		errMu  sync.Mutex
		wg     sync.WaitGroup
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	interval := time.Second / time.Duration(max(rampPerSec, 1))
	for i := 0; i < n && ctx.Err() == nil; i++ {
		time.Sleep(interval)
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(t.Body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					fail(err)
				}
				return
			}
			defer resp.Body.Close()
			var buf [1]byte
			if _, err := resp.Body.Read(buf[:]); err != nil {
				fail(err)
				return
			}
			opened.Add(1)
			io.Copy(io.Discard, resp.Body) // until the stream ends or is cancelled
		})
	}
	// Wait for every stream to have sent its first byte (or 60 s more).
	for wait := time.Now().Add(60 * time.Second); opened.Load() < int64(n) && time.Now().Before(wait) && ctx.Err() == nil; {
		time.Sleep(50 * time.Millisecond)
	}
	open = int(opened.Load())
	measure(open)
	cancel()
	wg.Wait()
	return open, firstErr
}

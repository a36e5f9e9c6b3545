package gateway_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/sim"
)

// BenchmarkIdleStreams holds 500 streams of one chunk a second open, in
// process, directly against the simulator, through a bare reverse proxy
// and through toolgate, and
// reports the Go heap, stacks and goroutines per stream after a GC. The
// difference between the two is what toolgate adds per idle stream, apart
// from the operating system's socket buffers.
func BenchmarkIdleStreams(b *testing.B) {
	up := httptest.NewServer(sim.New(sim.Options{Chunks: 600, ChunkDelay: time.Second}))
	defer up.Close()
	gw := benchGateway(b, up.URL)
	u, _ := url.Parse(up.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	bare := httptest.NewServer(rp)
	defer bare.Close()
	short := []byte(`{"model":"sim-text","stream":true,"messages":[{"role":"user","content":"Take your time."}]}`)
	// A 200-message agent transcript (about 100 KB): once its stream is
	// committed, toolgate no longer holds it.
	long := append([]byte(`{"stream":true,`), sim.Transcript("sim-text", 200, -1)[1:]...)
	b.Run("direct", func(b *testing.B) { idleStreams(b, up.URL, short) })
	b.Run("reverseproxy", func(b *testing.B) { idleStreams(b, bare.URL, short) })
	b.Run("toolgate", func(b *testing.B) { idleStreams(b, gw, short) })
	b.Run("transcript/direct", func(b *testing.B) { idleStreams(b, up.URL, long) })
	b.Run("transcript/toolgate", func(b *testing.B) { idleStreams(b, gw, long) })
}

func idleStreams(b *testing.B, target string, body []byte) {
	const streams = 500
	for b.Loop() {
		tr := &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		var wg sync.WaitGroup
		stop := make(chan struct{})
		opened := make(chan struct{}, streams)
		for range streams {
			wg.Go(func() {
				resp, err := (&http.Client{Transport: tr}).Post(target+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					opened <- struct{}{}
					return
				}
				defer resp.Body.Close()
				var one [1]byte
				resp.Body.Read(one[:])
				opened <- struct{}{}
				<-stop
			})
		}
		for range streams {
			<-opened
		}
		time.Sleep(2 * time.Second)
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		g1 := runtime.NumGoroutine()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/streams/1024, "heap-KB/stream")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/streams/1024, "stack-KB/stream")
		b.ReportMetric(float64(g1-g0)/streams, "goroutines/stream")
		close(stop)
		wg.Wait()
		tr.CloseIdleConnections()
	}
}

package gateway

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A response whose upstream keeps sending is not cut, however long it
// lasts; one that falls silent is cut once it has been silent for
// read_idle_timeout; a watch stopped never cuts.
func TestIdleWatch(t *testing.T) {
	t.Parallel()
	const idle = time.Second
	pr, pw := io.Pipe()
	w := watchIdle(&http.Response{Body: pr}, idle)
	defer w.stop()
	// A byte every twentieth of the timeout, 1.25 times the timeout in all:
	// a writer held up for most of the timeout still keeps the response.
	const sends = 25
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for range sends {
			if _, err := pw.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(idle / 20)
		}
	}()
	got, buf := 0, make([]byte, 8)
	var last time.Time
	for {
		n, err := w.Read(buf)
		if n > 0 {
			got, last = got+n, time.Now()
		}
		if err != nil {
			if !errors.Is(err, errUpstreamIdle) {
				t.Fatalf("read: %v, want the idle error", err)
			}
			break
		}
	}
	<-wrote
	if got != sends {
		t.Errorf("cut after %d of %d bytes, sent a twentieth of the timeout apart", got, sends)
	}
	if silent := time.Since(last); silent < idle {
		t.Errorf("cut after %v of silence, before the timeout (%v)", silent, idle)
	}

	stopped := watchIdle(&http.Response{Body: io.NopCloser(nil)}, 10*time.Millisecond)
	stopped.stop()
	time.Sleep(50 * time.Millisecond)
	if stopped.fired.Load() {
		t.Error("a stopped watch cut its response")
	}
}

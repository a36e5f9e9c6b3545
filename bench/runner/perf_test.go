package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// perfBlock writes one sample as perf script -F ip,sym,dso prints it: its
// frames innermost first, kernel frames named k:…
func perfBlock(b *strings.Builder, frames ...string) {
	for i, f := range frames {
		dso := "/bin/toolgate"
		if name, ok := strings.CutPrefix(f, "k:"); ok {
			f, dso = name, "[kernel.kallsyms]"
		}
		fmt.Fprintf(b, "\t%x %s (%s)\n", 0x401000+i, f, dso)
	}
	b.WriteString("\n")
}

const (
	gw      = "github.com/toolgate/toolgate/internal/gateway."
	handler = "net/http.serverHandler.ServeHTTP"
	serve   = "net/http.(*conn).serve"
)

// perfScript is what a toolgate process under load records: ten samples
// in the handler (three under the stream), under wrappers every request passes through, one
// writing a response in the server, one in the transport's read loop, one
// an idle M, one a collector's worker.
func perfScript() string {
	var b strings.Builder
	wrap := []string{gw + "(*Gateway).handle", gw + "instrument.func2", "github.com/go-chi/chi/v5.(*Mux).ServeHTTP", handler, serve}
	in := func(frames ...string) { perfBlock(&b, append(frames, wrap...)...) }
	in("k:finish_task_switch.isra.0", "k:do_syscall_64", "syscall.write", "github.com/toolgate/toolgate/internal/wire.(*Writer).Done", gw+"(*Gateway).stream")
	in("github.com/toolgate/toolgate/internal/wire.(*Normalizer).chunk", gw+"(*Gateway).stream")
	in("github.com/toolgate/toolgate/internal/wire.(*Normalizer).chunk", gw+"(*Gateway).stream")
	in("go.uber.org/zap/zapcore.(*jsonEncoder).EncodeEntry", "github.com/toolgate/toolgate/internal/observe.(*Record).Log")
	in("github.com/toolgate/toolgate/internal/wire.DecodeRequest", gw+"(*Gateway).receive")
	in("k:tcp_sendmsg", "net/http.(*persistConn).roundTrip", "github.com/toolgate/toolgate/internal/upstream.(*Client).roundTrip")
	in("runtime.mallocgc", "github.com/toolgate/toolgate/internal/upstream.(*Client).roundTrip")
	in("io.copyBuffer", "github.com/toolgate/toolgate/internal/upstream.Finish")
	in("time.AfterFunc", "github.com/toolgate/toolgate/internal/upstream.Finish")
	in() // the handle function's own time
	perfBlock(&b, "net/http.(*response).finishRequest", serve)
	perfBlock(&b, "k:tcp_recvmsg", "net/http.(*persistConn).readLoop")
	perfBlock(&b, "k:finish_task_switch.isra.0", "runtime.futex.abi0", "runtime.findRunnable", "runtime.park_m", "runtime.mcall", "[unknown]")
	perfBlock(&b, "runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker")
	return b.String()
}

func TestPerfSummary(t *testing.T) {
	samples, err := readPerfScript(strings.NewReader(perfScript()))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 14 {
		t.Fatalf("%d samples, want 14", len(samples))
	}
	if last := samples[12].frames; last[len(last)-1] != fmt.Sprintf("%x", 0x401000+5) {
		t.Errorf("a frame without a symbol is named %q, want its address", last[len(last)-1])
	}
	// Two requests: a sample is 1e6/perfHz/2 µs of CPU per request.
	us := func(n int) float64 { return round3(float64(n) * 1e6 / perfHz / 2) }
	r := summarizePerf("stream50-200", "toolgate", samples, 2)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"total", r.Total, us(14)},
		{"kernel", r.Kernel, us(4)},
		{"handler", r.Handler, us(10)},
		{"server", r.Server, us(1)},
		{"transport", r.Transport, us(1)},
		{"scheduler", r.Scheduler, us(1)},
		{"gc", r.GC, us(1)},
		{"other", r.Other, 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v µs per request, want %v", c.name, c.got, c.want)
		}
	}
	// The handler's parts: the wrappers hold all ten samples and are
	// split; under them each call holds at most two (a quarter of ten):
	// the stream, which holds three, is split into its callees, and the
	// handle function's own sample is its self.
	want := []perfFunc{
		{"github.com/toolgate/toolgate/internal/upstream.(*Client).roundTrip", us(2)},
		{"github.com/toolgate/toolgate/internal/upstream.Finish", us(2)},
		{"github.com/toolgate/toolgate/internal/wire.(*Normalizer).chunk", us(2)},
		{gw + "(*Gateway).handle (self)", us(1)},
		{gw + "(*Gateway).receive", us(1)},
		{"github.com/toolgate/toolgate/internal/observe.(*Record).Log", us(1)},
		{"github.com/toolgate/toolgate/internal/wire.(*Writer).Done", us(1)},
	}
	if !slices.Equal(r.Heaviest, want) {
		t.Errorf("parts\n%+v\nwant\n%+v", r.Heaviest, want)
	}
	var sum float64
	for _, p := range r.Heaviest {
		sum += p.US
	}
	if math.Abs(sum-r.Handler) > 0.01 {
		t.Errorf("the parts add up to %v µs, the handler is %v", sum, r.Handler)
	}
}

// A recording of no requests (a round that sent nothing) divides by
// nothing.
func TestPerfSummaryNoRequests(t *testing.T) {
	samples, _ := readPerfScript(strings.NewReader(perfScript()))
	if r := summarizePerf("p", "proxy", samples, 0); r.Total != 0 || r.Samples != 14 || r.Heaviest != nil {
		t.Errorf("%+v", r)
	}
}

// Whatever perf script prints, the reader returns samples of at least one
// frame each, and the summary's parts add up to its handler.
func FuzzPerfScript(f *testing.F) {
	f.Add(perfScript())
	f.Add("\t401000 (\n\n\n\t \n\tx [unknown] ()\n")
	f.Add("401000 net/http.serverHandler.ServeHTTP (/bin/x)\n401001 net/http.serverHandler.ServeHTTP\n")
	f.Fuzz(func(t *testing.T, script string) {
		samples, err := readPerfScript(strings.NewReader(script))
		if err != nil {
			return // a line longer than the scanner takes
		}
		for _, s := range samples {
			if len(s.frames) == 0 {
				t.Fatal("a sample without frames")
			}
		}
		r := summarizePerf("p", "t", samples, 3)
		var sum float64
		for _, p := range r.Heaviest {
			sum += p.US
		}
		if len(r.Heaviest) < 12 && math.Abs(sum-r.Handler) > 0.001*float64(len(r.Heaviest)+1) {
			t.Fatalf("the parts add up to %v µs, the handler is %v", sum, r.Handler)
		}
	})
}

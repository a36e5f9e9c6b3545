package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// goBench is one Go benchmark's result, as `go test -bench` printed it.
type goBench struct {
	Name     string  `json:"go_benchmark"`
	NsPerOp  float64 `json:"ns_per_op"`
	AllocsOp float64 `json:"allocs_per_op"`
	// Metrics are the benchmark's own b.ReportMetric values, by unit.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// goBenchmark is a Go benchmark run by make bench: its package, -bench
// pattern and further go test flags.
type goBenchmark struct {
	pkg, pattern string
	flags        []string
}

// goBenchmarks are the Go benchmarks behind the per-chunk, long-stream
// and hostile-input targets, and in process (without the processes'
// noise; no target) the tool-call stream and the 50-chunk stream, hot and
// with the caches cold, and the normalizer over parallel calls.
var goBenchmarks = []goBenchmark{
	{"./internal/wire/", "BenchmarkChunk$|BenchmarkRun$|BenchmarkParallelCalls$", nil},
	{"./internal/gateway/", "BenchmarkChatStream$|BenchmarkChatStreamCold$|BenchmarkChatStream1000$|BenchmarkChatToolCalls$", nil},
	// One round: each shape is served several times inside it.
	{"./internal/testing/faults/", "BenchmarkHostileCPU$", []string{"-benchtime", "1x"}},
}

// runGoBenchmarks runs goBenchmarks (with -benchmem) and parses their
// results; each benchmark's output is echoed.
func runGoBenchmarks() ([]goBench, error) {
	var out []goBench
	for _, gb := range goBenchmarks {
		gbs, err := runGoBenchmark(gb, true)
		if err != nil {
			return nil, err
		}
		out = append(out, gbs...)
	}
	return out, nil
}

// runGoBenchmark runs one go test -bench and parses its results, echoing
// its output if echo is set.
func runGoBenchmark(gb goBenchmark, echo bool) ([]goBench, error) {
	args := append([]string{"test", "-run", "^$", "-bench", gb.pattern, "-benchmem"}, gb.flags...)
	cmd := exec.Command("go", append(args, gb.pkg)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go test -bench %s %s: %w\n%s", gb.pattern, gb.pkg, err, buf.Bytes())
	}
	if echo {
		os.Stdout.Write(buf.Bytes())
	}
	var out []goBench
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if g, ok := parseBenchLine(sc.Text()); ok {
			out = append(out, g)
		}
	}
	return out, nil
}

// speedProbe is a short run of BenchmarkChunk's text deltas: the
// machine's speed in user space, which the CPU ratios of the tool-call
// streams and the transcript's latency follow (docs/performance.md: the
// same work read 1.12–1.15× the proxy's CPU on the tool-call streams on a
// day a text delta took 88–97 ns, and 1.38–1.62× on one it took 190–430).
var speedProbe = goBenchmark{"./internal/wire/", "BenchmarkChunk/^text$", []string{"-benchtime", "2000x", "-count", "3"}}

// speedResult is the probe's benchmark, as the per-chunk targets read it.
const speedResult = "BenchmarkChunk/text/chunks=1000"

// machineSpeed runs speedProbe and returns the fastest of its runs, in ns
// a text delta.
func machineSpeed() (float64, error) {
	gbs, err := runGoBenchmark(speedProbe, false)
	if err != nil {
		return 0, err
	}
	best, ok := fastestTextDelta(gbs)
	if !ok {
		return 0, fmt.Errorf("go test -bench %s %s: no %s", speedProbe.pattern, speedProbe.pkg, speedResult)
	}
	return best, nil
}

// fastestTextDelta is the fastest of the runs of speedResult, in ns a text
// delta (1,000 a run): the machine's best in that moment, the others being
// its noise.
func fastestTextDelta(gbs []goBench) (float64, bool) {
	best := 0.0
	for _, g := range gbs {
		if ns := g.NsPerOp / 1000; g.Name == speedResult && ns > 0 && (best == 0 || ns < best) {
			best = ns
		}
	}
	return best, best > 0
}

// parseBenchLine reads a result line of go test -bench: the name (its
// -GOMAXPROCS suffix dropped), the iterations, then value and unit pairs.
func parseBenchLine(line string) (goBench, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return goBench{}, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return goBench{}, false
	}
	name := f[0]
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	g := goBench{Name: name, Metrics: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return goBench{}, false
		}
		switch f[i+1] {
		case "ns/op":
			g.NsPerOp = v
		case "allocs/op":
			g.AllocsOp = v
		default:
			g.Metrics[f[i+1]] = v
		}
	}
	return g, true
}

// goResult returns the named benchmark's result.
func goResult(gbs []goBench, name string) (goBench, bool) {
	for _, g := range gbs {
		if g.Name == name {
			return g, true
		}
	}
	return goBench{}, false
}

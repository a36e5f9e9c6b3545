// Command bench-runner measures toolgate against its floor: the same load
// sent directly to the simulator ("direct"), through a bare
// httputil.ReverseProxy ("proxy") and through toolgate with a typical
// configuration ("toolgate"), each a separate process, in interleaved
// rounds so that a noisy machine's drift hits all three alike.
//
//	go run ./bench/runner -bin bin            # quick: a few minutes
//	go run ./bench/runner -bin bin -full      # every load point, longer
//
// It prints a table per load point and the targets, and writes the same as
// JSON lines (-out). See bench/README.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/bench/load"
)

// targets, in the order each round visits them; "baseline" (another
// toolgate binary, -baseline) joins them when given.
var targets = []string{"direct", "proxy", "toolgate"}

// point is one load point.
type point struct {
	Name   string
	Kind   string // open | hold
	Rate   float64
	Body   []byte
	Stream bool
	Hold   int // hold: concurrent streams
	// Clients is a closed-loop point's concurrent clients (Kind closed).
	Clients int
}

// row is one target's measurements at one load point, aggregated over
// rounds (medians; peak RSS is the largest).
type row struct {
	Point      string    `json:"point"`
	Target     string    `json:"target"`
	Rounds     int       `json:"rounds"`
	Requests   int       `json:"requests"`
	Errors     int       `json:"errors"`
	Rate       float64   `json:"rate_per_s"`
	P50        float64   `json:"p50_ms"`
	P50Rounds  []float64 `json:"p50_ms_rounds,omitempty"` // each round's, in order
	P90        float64   `json:"p90_ms"`
	P99        float64   `json:"p99_ms"`
	TTFB50     float64   `json:"ttfb_p50_ms,omitempty"`
	Over50     float64   `json:"overhead_p50_ms"`
	Over99     float64   `json:"overhead_p99_ms"`
	OverTTFB   float64   `json:"overhead_ttfb_p50_ms,omitempty"`
	CPUPer1000 float64   `json:"cpu_s_per_1000"`
	CPURounds  []float64 `json:"cpu_s_per_1000_rounds,omitempty"` // each round's, in order
	PeakRSSMB  float64   `json:"peak_rss_mb"`
	Streams    int       `json:"streams,omitempty"`
	KBPer      float64   `json:"rss_kb_per_stream,omitempty"`
	HeapKBPer  float64   `json:"heap_kb_per_stream,omitempty"`  // toolgate: Go heap in use, per stream
	StackKBPer float64   `json:"stack_kb_per_stream,omitempty"` // toolgate: goroutine stacks, per stream
	FirstErr   string    `json:"first_error,omitempty"`
	// StealRounds are the host's steal share of the machine's CPU time
	// during each kept round (steal.go).
	StealRounds []float64 `json:"steal_rounds,omitempty"`
}

func main() {
	bin := flag.String("bin", "bin", "directory with toolgate, toolgate-sim and bench-proxy")
	full := flag.Bool("full", false, "every load point, more and longer rounds")
	out := flag.String("out", "bench/results/latest.jsonl", "JSON lines output")
	profile := flag.String("profile", "", "directory for toolgate's CPU and allocation profiles, one pair per load point (its first round)")
	only := flag.String("only", "", "run only the load points whose name contains this")
	goBenchFlag := flag.Bool("go", true, "also run the Go benchmarks behind the per-chunk and long-stream targets (BenchmarkChunk, BenchmarkChatStream1000)")
	baseline := flag.String("baseline", "", "another toolgate binary (a build of an earlier commit) measured beside this one, as the target \"baseline\"")
	rates := flag.String("rates", "", "extra rates per second, comma-separated, for the 50-chunk stream: each a load point stream50-<rate>, to show how CPU per stream moves with the rate")
	flag.Float64Var(&maxSteal, "max-steal", maxSteal, "run a round again (once) when the host took more than this share of the machine's CPU time during it (steal; 0: never)")
	flag.StringVar(&perfDir, "perf", "", "directory for Linux perf recordings of the proxy's and toolgate's first round of each open load point; prints where each spends its CPU per request (needs perf)")
	flag.Parse()
	if *baseline != "" {
		baselineBin = *baseline
		targets = append(targets, "baseline")
	}
	extra, err := ratePoints(*rates)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-runner: -rates:", err)
		os.Exit(2)
	}
	if err := run(*bin, *full, *out, *profile, *only, *goBenchFlag, extra); err != nil {
		fmt.Fprintln(os.Stderr, "bench-runner:", err)
		os.Exit(1)
	}
}

// ratePoints are -rates' load points: the 50-chunk stream at each rate.
func ratePoints(list string) ([]point, error) {
	var out []point
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r <= 0 || r > 100000 {
			return nil, fmt.Errorf("%q is not a rate per second (1 to 100000)", f)
		}
		out = append(out, point{Name: fmt.Sprintf("stream50-%d", r), Kind: "open", Rate: float64(r), Body: streamBody, Stream: true})
	}
	return out, nil
}

func run(bin string, full bool, out, profileDir, only string, withGo bool, extra []point) error {
	rounds, dur := 3, 3*time.Second
	holds := []int{1000}
	if full {
		rounds, dur = 5, 10*time.Second
		// 10,000 streams need 20,000+ descriptors in the proxying process
		// (client and upstream connections); the descriptor limit may be
		// lower (see maxHold).
		holds = []int{1000, maxHold(10000)}
	}
	points := []point{
		{Name: "nonstream-500", Kind: "open", Rate: 500, Body: toolBody},
		{Name: "nonstream-2000", Kind: "open", Rate: 2000, Body: toolBody},
		{Name: "stream50-200", Kind: "open", Rate: 200, Body: streamBody, Stream: true},
		{Name: "transcript100-200", Kind: "open", Rate: 200, Body: transcriptBody()},
		{Name: "stream50-saturated", Kind: "closed", Clients: 1000, Body: streamBody, Stream: true},
		{Name: "toolcalls-100", Kind: "open", Rate: 100, Body: parallelBody, Stream: true},
		{Name: "toolcalls-paced-20", Kind: "open", Rate: 20, Body: pacedParallelBody, Stream: true},
	}
	for _, e := range extra {
		if !slices.ContainsFunc(points, func(p point) bool { return p.Name == e.Name }) {
			points = append(points, e)
		}
	}
	for _, n := range holds {
		points = append(points, point{Name: fmt.Sprintf("idle-streams-%d", n), Kind: "hold", Hold: n, Body: slowBody, Stream: true})
	}
	points = slices.DeleteFunc(points, func(p point) bool { return !strings.Contains(p.Name, only) })
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	jf, err := os.Create(out)
	if err != nil {
		return err
	}
	defer jf.Close()
	enc := json.NewEncoder(jf)
	host, _ := os.Hostname()
	speed, err := machineSpeed()
	if err != nil {
		return err
	}
	fmt.Printf("machine: %s, %d CPUs, %s; rounds %d × %s per target\n", host, runtime.NumCPU(), cpuModel(), rounds, dur)
	fmt.Printf("user-space speed: a text delta read, normalized and written in %.0f ns (BenchmarkChunk, best of 3; 88–97 ns on the machine where the limits were met)\n\n", speed)
	enc.Encode(map[string]any{"machine": host, "cpus": runtime.NumCPU(), "cpu_model": cpuModel(), "go": runtime.Version(), "rounds": rounds, "seconds": dur.Seconds(), "time": time.Now().UTC().Format(time.RFC3339), "text_delta_ns": speed})

	var all []row
	var perfRows []perfRow
	var open, hold []point
	for _, p := range points {
		if p.Kind != "hold" {
			open = append(open, p)
		} else {
			hold = append(hold, p)
		}
	}
	if len(open) > 0 {
		rows, prs, err := runOpen(bin, open, rounds, dur, profileDir)
		if err != nil {
			return err
		}
		all, perfRows = append(all, rows...), prs
	}
	for _, p := range hold {
		rows, err := runHold(bin, p, profileDir)
		if err != nil {
			return err
		}
		all = append(all, rows...)
	}
	for _, r := range all {
		enc.Encode(r)
	}
	for _, r := range perfRows {
		enc.Encode(r)
	}
	var gbs []goBench
	goSteal := -1.0
	if withGo {
		m := startSteal()
		if gbs, err = runGoBenchmarks(); err != nil {
			return err
		}
		goSteal = m.share()
		for _, g := range gbs {
			enc.Encode(g)
		}
		enc.Encode(map[string]float64{"go_benchmarks_steal": goSteal})
	}
	for _, c := range checks(all, gbs) {
		enc.Encode(c)
	}
	printTable(all, gbs)
	printRatios(all)
	printPerf(perfRows)
	if l := stealLine(all, goSteal); l != "" {
		fmt.Println()
		fmt.Println(l)
	}
	return nil
}

// maxHold caps a held-streams point at what the descriptor limit allows a
// proxying process: two descriptors per stream, and some to spare.
func maxHold(n int) int {
	var lim int
	if b, err := os.ReadFile("/proc/self/limits"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Max open files") {
				f := strings.Fields(l)
				lim, _ = strconv.Atoi(f[4]) // the hard limit
			}
		}
	}
	if lim > 0 && 2*n+200 > lim {
		return (lim - 200) / 2 / 100 * 100
	}
	return n
}

// runOpen starts the fast simulator, the proxy and toolgate, and runs the
// open-loop points in interleaved rounds.
func runOpen(bin string, points []point, rounds int, dur time.Duration, profileDir string) ([]row, []perfRow, error) {
	procs, urls, err := startAll(bin, []string{"--fast", "--chunks", "50"})
	if err != nil {
		return nil, nil, err
	}
	defer stopAll(procs)
	client := load.NewClient(1024)
	defer client.CloseIdleConnections()
	ctx := context.Background()
	var rows []row
	var perfRows []perfRow
	for _, p := range points {
		// Warm up every target (connections, caches, the Go runtime).
		for _, t := range targets {
			p.run(ctx, client, urls[t], time.Second)
		}
		res := map[string][]load.Result{}
		cpu := map[string][]float64{}
		steal := map[string][]float64{}
		peak := map[string]float64{}
		for round := range rounds {
			for _, t := range targets {
				pid := procs[t].Process.Pid
				var kept *attemptResult
				for attempt := 0; ; attempt++ {
					resetPeak(pid)
					before := cpuSeconds(pid)
					var stopProfile func()
					if profileDir != "" && t == "toolgate" && round == 0 {
						stopProfile = startProfile(urls["toolgate-admin"], profileDir, p.Name, dur)
					}
					var finishPerf func(requests int) (perfRow, error)
					if perfDir != "" && t != "direct" && round == 0 {
						finishPerf = startPerf(pid, p.Name, t, dur)
					}
					meter := startSteal()
					a := attemptResult{r: p.run(ctx, client, urls[t], dur), spent: -1} // spent -1: no request, no CPU per request
					a.stolen = meter.share()
					if stopProfile != nil {
						stopProfile()
					}
					r := a.r
					if n := len(r.Latencies) + r.Errors; n > 0 {
						a.spent = (cpuSeconds(pid) - before) / float64(n) * 1000
					}
					a.peak = peakRSS(pid)
					if finishPerf != nil {
						pr, err := finishPerf(len(r.Latencies) + r.Errors)
						if err != nil {
							return nil, nil, err
						}
						perfRows = append(perfRows, pr)
					}
					fmt.Printf("  %-18s round %d %-8s p50 %7.3f ms  p99 %7.3f ms  %6.0f/s  errors %d  steal %4.1f%%\n", p.Name, round+1, t,
						ms(load.Quantile(r.Latencies, .5)), ms(load.Quantile(r.Latencies, .99)), r.Rate(), r.Errors, 100*a.stolen)
					if kept == nil || a.stolen < kept.stolen {
						kept = &a
					}
					if !again(a.stolen, attempt, stopProfile != nil || finishPerf != nil) {
						break
					}
					fmt.Printf("  %-18s round %d %-8s the host took more than %.0f%% of the machine: run again (the attempt with less steal is kept)\n", p.Name, round+1, t, 100*maxSteal)
				}
				res[t] = append(res[t], kept.r)
				if kept.spent >= 0 {
					cpu[t] = append(cpu[t], kept.spent)
				}
				steal[t] = append(steal[t], round3(kept.stolen))
				peak[t] = max(peak[t], kept.peak)
			}
		}
		for _, t := range targets {
			r := aggregate(p.Name, t, res[t], res["direct"], cpu[t], peak[t])
			r.StealRounds = steal[t]
			rows = append(rows, r)
		}
	}
	return rows, perfRows, nil
}

// attemptResult is one attempt at a round of one target.
type attemptResult struct {
	r      load.Result
	spent  float64 // CPU ms per request; -1 without requests
	stolen float64 // the host's steal share during it
	peak   float64 // the target's peak RSS, KB
}

// run sends the point's load to url for d: at its rate (open) or from its
// clients (closed).
func (p point) run(ctx context.Context, client *http.Client, url string, d time.Duration) load.Result {
	t := load.Target{URL: url, Body: p.Body, Stream: p.Stream}
	if p.Kind == "closed" {
		return load.Closed(ctx, client, t, p.Clients, d)
	}
	return load.Open(ctx, client, t, p.Rate, d)
}

// runHold measures memory per idle stream: each target holds p.Hold
// streams of one chunk a second from a slow simulator.
func runHold(bin string, p point, profileDir string) ([]row, error) {
	procs, urls, err := startAll(bin, []string{"--chunks", "120", "--delay", "1s"})
	if err != nil {
		return nil, err
	}
	defer stopAll(procs)
	var rows []row
	for _, t := range targets {
		client := load.NewClient(p.Hold + 16)
		pid := procs[t].Process.Pid
		// Warm up: a few short-lived requests, then the baseline.
		warm := load.Target{URL: urls[t], Body: toolBody}
		load.Open(context.Background(), client, warm, 50, time.Second)
		base := rss(pid)
		var at float64
		var mem0, mem1 map[string]float64
		admin, gateway := urls[t+"-admin"]
		if gateway {
			mem0 = goMem(admin)
		}
		open, ferr := load.Hold(context.Background(), client, load.Target{URL: urls[t], Body: p.Body, Stream: true}, p.Hold, 1000, func(int) {
			time.Sleep(3 * time.Second) // let the streams settle into their idle state
			at = rss(pid)
			if gateway {
				mem1 = goMem(admin)
				if profileDir != "" && t == "toolgate" {
					saveProfile(urls["toolgate-admin"]+"/debug/pprof/heap", filepath.Join(profileDir, p.Name+".heap.pprof"))
				}
			}
		})
		client.CloseIdleConnections()
		r := row{Point: p.Name, Target: t, Rounds: 1, Streams: open, PeakRSSMB: at / 1024}
		if open > 0 {
			r.KBPer = (at - base) / float64(open)
			if mem1 != nil {
				r.HeapKBPer = (mem1["go_memstats_heap_inuse_bytes"] - mem0["go_memstats_heap_inuse_bytes"]) / 1024 / float64(open)
				r.StackKBPer = (mem1["go_memstats_stack_inuse_bytes"] - mem0["go_memstats_stack_inuse_bytes"]) / 1024 / float64(open)
			}
		}
		if ferr != nil {
			r.FirstErr = ferr.Error()
			r.Errors = p.Hold - open
		}
		fmt.Printf("  %-18s %-8s %d streams open, RSS %.1f MB (baseline %.1f MB), %.1f KB per stream", p.Name, t, open, at/1024, base/1024, r.KBPer)
		if mem1 != nil {
			fmt.Printf(" (Go heap %.1f KB, stacks %.1f KB)", r.HeapKBPer, r.StackKBPer)
		}
		fmt.Println()
		rows = append(rows, r)
		time.Sleep(2 * time.Second) // the cancelled streams wind down
	}
	return rows, nil
}

// aggregate reduces one target's rounds: medians of the per-round
// quantiles, and the overhead as the median over rounds of the per-round
// difference from direct.
func aggregate(pointName, t string, rs, direct []load.Result, cpu []float64, peak float64) row {
	r := row{Point: pointName, Target: t, Rounds: len(rs), PeakRSSMB: peak / 1024, CPUPer1000: median(cpu), CPURounds: cpu}
	var p50, p90, p99, ttfb, rate, o50, o99, ottfb []float64
	for i, x := range rs {
		r.Requests += x.Requests
		r.Errors += x.Errors
		if r.FirstErr == "" {
			r.FirstErr = x.FirstErr
		}
		p50 = append(p50, ms(load.Quantile(x.Latencies, .5)))
		p90 = append(p90, ms(load.Quantile(x.Latencies, .9)))
		p99 = append(p99, ms(load.Quantile(x.Latencies, .99)))
		ttfb = append(ttfb, ms(load.Quantile(x.TTFB, .5)))
		rate = append(rate, x.Rate())
		d := direct[i]
		o50 = append(o50, ms(load.Quantile(x.Latencies, .5)-load.Quantile(d.Latencies, .5)))
		o99 = append(o99, ms(load.Quantile(x.Latencies, .99)-load.Quantile(d.Latencies, .99)))
		ottfb = append(ottfb, ms(load.Quantile(x.TTFB, .5)-load.Quantile(d.TTFB, .5)))
	}
	r.P50, r.P90, r.P99, r.TTFB50, r.Rate = median(p50), median(p90), median(p99), median(ttfb), median(rate)
	r.P50Rounds = p50
	r.Over50, r.Over99, r.OverTTFB = median(o50), median(o99), median(ottfb)
	return r
}

// check is one of the performance targets, as measured.
type check struct {
	Target   string  `json:"target"`
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	Unit     string  `json:"unit"`
	AtLeast  bool    `json:"at_least,omitempty"` // the limit is a floor
	Met      bool    `json:"met"`
	// Rounds are a CPU ratio's values round by round (toolgate's round
	// against the proxy's round just before it): how much one round
	// decides. Measured is the ratio of the two medians. For the
	// transcript's p50 difference they are each round's difference, and
	// Measured their median.
	Rounds []float64 `json:"rounds,omitempty"`
}

// checks measures the results against the targets: the load points'
// ratios to the bare proxy in the same run, and the Go benchmarks'.
func checks(rows []row, gbs []goBench) []check {
	get := func(p, t string) (row, bool) {
		for _, r := range rows {
			if r.Point == p && r.Target == t {
				return r, true
			}
		}
		return row{}, false
	}
	var out []check
	add := func(name string, measured, limit float64, unit string) {
		out = append(out, check{Target: name, Measured: round3(measured), Limit: limit, Unit: unit, Met: measured <= limit})
	}
	// cpu is add for a CPU-per-request ratio, with its per-round ratios.
	cpu := func(name string, g, p row, limit float64) {
		add(name, ratio(g.CPUPer1000, p.CPUPer1000), limit, "×")
		for _, r := range roundRatios(g, p) {
			out[len(out)-1].Rounds = append(out[len(out)-1].Rounds, round3(r))
		}
	}
	atLeast := func(name string, measured, limit float64, unit string) {
		out = append(out, check{Target: name, Measured: round3(measured), Limit: limit, Unit: unit, AtLeast: true, Met: measured >= limit})
	}
	if g, ok := get("nonstream-2000", "toolgate"); ok {
		p, _ := get("nonstream-2000", "proxy")
		add("non-streamed 2000/s: toolgate's added p50 / the proxy's", ratio(g.Over50, p.Over50), 1.5, "×")
		add("non-streamed 2000/s: toolgate's added p99 / the proxy's", ratio(g.Over99, p.Over99), 1.1, "×")
		add("non-streamed 2000/s: errors", float64(g.Errors), 0, "")
		cpu("non-streamed 2000/s: CPU per request / the proxy's", g, p, 2)
	}
	if g, ok := get("stream50-200", "toolgate"); ok {
		p, _ := get("stream50-200", "proxy")
		cpu("streams at 200/s: CPU per stream / the proxy's", g, p, 1.15)
		add("streamed: time to first byte over direct", g.OverTTFB, 1, "ms")
	}
	if g, ok := get("stream50-saturated", "toolgate"); ok {
		p, _ := get("stream50-saturated", "proxy")
		atLeast("saturated streams (1000 clients): streams/s / the proxy's", ratio(g.Rate, p.Rate), 0.95, "×")
		cpu("saturated streams: CPU per stream / the proxy's", g, p, 1.2)
		add("saturated streams: added p50 / the proxy's", ratio(g.Over50, p.Over50), 1.5, "×")
	}
	if g, ok := get("toolcalls-100", "toolgate"); ok {
		p, _ := get("toolcalls-100", "proxy")
		cpu("tool-call streams (4 calls × 200 fragments) at 100/s: CPU per stream / the proxy's", g, p, 1.2)
	}
	if g, ok := get("toolcalls-paced-20", "toolgate"); ok {
		p, _ := get("toolcalls-paced-20", "proxy")
		cpu("the same streams paced, a fragment a millisecond, at 20/s: CPU per stream / the proxy's", g, p, 1.2)
	}
	var idle *row
	for i, r := range rows {
		if r.Target == "toolgate" && r.Streams > 0 && (idle == nil || r.Streams > idle.Streams) {
			idle = &rows[i]
		}
	}
	if idle != nil {
		if p, ok := get(idle.Point, "proxy"); ok {
			add(fmt.Sprintf("%s: RSS per idle stream over the proxy's", idle.Point), idle.KBPer-p.KBPer, 8, "KB")
		} else {
			add(fmt.Sprintf("%s: RSS per idle stream", idle.Point), idle.KBPer, 48, "KB")
		}
	}
	if g, ok := get("transcript100-200", "toolgate"); ok {
		p, _ := get("transcript100-200", "proxy")
		// Each round's difference (toolgate's p50 against the proxy's in
		// the same round), and their median: the machine's moment moves
		// both targets of a round alike, and two medians taken from
		// different rounds would compare two moments.
		var diffs []float64
		for i := range min(len(g.P50Rounds), len(p.P50Rounds)) {
			diffs = append(diffs, round3((g.P50Rounds[i]-p.P50Rounds[i])*1000))
		}
		measured := (g.P50 - p.P50) * 1000
		if len(diffs) > 0 {
			measured = median(diffs)
		}
		add("100-message transcript: toolgate p50 − proxy p50", measured, 100, "µs")
		out[len(out)-1].Rounds = diffs
	}
	if g, ok := goResult(gbs, "BenchmarkChatStream1000/toolgate"); ok {
		p, _ := goResult(gbs, "BenchmarkChatStream1000/reverseproxy")
		add("1000-chunk stream end to end (BenchmarkChatStream1000): toolgate / the proxy", ratio(g.NsPerOp, p.NsPerOp), 2, "×")
	}
	for _, c := range []struct {
		name, bench string
		ns, allocs  float64
	}{{"text delta", "BenchmarkChunk/text/chunks=1000", 1000, 0.01}, {"tool-call fragment", "BenchmarkChunk/toolcall/chunks=1000", 2000, 0.05},
		{"text delta, one per read", "BenchmarkChunk/text-paced/chunks=1000", 1000, 0.01}, {"tool-call fragment, one per read", "BenchmarkChunk/toolcall-paced/chunks=1000", 2000, 0.05}} {
		if g, ok := goResult(gbs, c.bench); ok {
			add("per chunk, "+c.name+": time (BenchmarkChunk)", g.NsPerOp/1000, c.ns, "ns")
			add("per chunk, "+c.name+": allocations", g.AllocsOp/1000, c.allocs, "")
		}
	}
	if g, ok := goResult(gbs, "BenchmarkHostileCPU"); ok {
		names := slices.Sorted(maps.Keys(g.Metrics))
		for _, unit := range names {
			if shape, ok := strings.CutSuffix(unit, "-x-plain"); ok {
				add("hostile input, "+shape+": CPU / a plain body's of its size (BenchmarkHostileCPU)", g.Metrics[unit], 20, "×")
			}
		}
	}
	return out
}

func printTable(rows []row, gbs []goBench) {
	fmt.Println()
	fmt.Println("| point | target | rate/s | errors | p50 ms | p90 ms | p99 ms | added p50 ms | added p99 ms | TTFB p50 ms | added TTFB ms | CPU s/1000 req | peak RSS MB | KB/stream |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		if r.Streams > 0 || r.Point[:4] == "idle" {
			fmt.Printf("| %s | %s | %d streams | %d | | | | | | | | | %.1f | %.1f |\n", r.Point, r.Target, r.Streams, r.Errors, r.PeakRSSMB, r.KBPer)
			continue
		}
		ttfb, ottfb := "", ""
		if r.TTFB50 > 0 {
			ttfb, ottfb = fmt.Sprintf("%.3f", r.TTFB50), fmt.Sprintf("%.3f", r.OverTTFB)
		}
		fmt.Printf("| %s | %s | %.0f | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %s | %.3f | %.1f | |\n",
			r.Point, r.Target, r.Rate, r.Errors, r.P50, r.P90, r.P99, r.Over50, r.Over99, ttfb, ottfb, r.CPUPer1000, r.PeakRSSMB)
	}
	fmt.Println()
	fmt.Println("| target | measured | limit | met |")
	fmt.Println("|---|---|---|---|")
	for _, c := range checks(rows, gbs) {
		op := "≤"
		if c.AtLeast {
			op = "≥"
		}
		rounds := ""
		switch {
		case len(c.Rounds) > 0 && c.Unit == "µs":
			each := make([]string, len(c.Rounds))
			for i, v := range c.Rounds {
				each[i] = fmt.Sprintf("%.0f", v)
			}
			rounds = " (rounds " + strings.Join(each, ", ") + ")"
		case len(c.Rounds) > 0:
			rounds = fmt.Sprintf(" (rounds %.2f–%.2f)", slices.Min(c.Rounds), slices.Max(c.Rounds))
		}
		fmt.Printf("| %s | %.3f %s%s | %s %g %s | %v |\n", c.Target, c.Measured, c.Unit, rounds, op, c.Limit, c.Unit, c.Met)
	}
	if lines := inProcessCPU(gbs); len(lines) > 0 {
		fmt.Println()
		fmt.Println("In process (one Go process: the client, the simulator and the target; no target):")
		for _, l := range lines {
			fmt.Println("- " + l)
		}
	}
}

// printRatios prints toolgate's CPU per request over the proxy's at each
// load point that measured both, with each round's ratio: the figure the
// CPU targets compare, for every point (and -rates' points) at once.
func printRatios(rows []row) {
	lines := cpuRatios(rows)
	if len(lines) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("| point | rate/s | proxy CPU ms/request | toolgate CPU ms/request | toolgate / proxy (rounds) |")
	fmt.Println("|---|---|---|---|---|")
	for _, l := range lines {
		fmt.Println(l)
	}
}

// cpuRatios are printRatios' table rows, in the rows' order.
func cpuRatios(rows []row) []string {
	var out []string
	for _, g := range rows {
		if g.Target != "toolgate" || g.CPUPer1000 <= 0 {
			continue
		}
		i := slices.IndexFunc(rows, func(r row) bool { return r.Point == g.Point && r.Target == "proxy" })
		if i < 0 || rows[i].CPUPer1000 <= 0 {
			continue
		}
		p := rows[i]
		var each []string
		for _, r := range roundRatios(g, p) {
			each = append(each, fmt.Sprintf("%.2f", r))
		}
		out = append(out, fmt.Sprintf("| %s | %.0f | %.3f | %.3f | %.3f× (%s) |", g.Point, p.Rate, p.CPUPer1000, g.CPUPer1000, ratio(g.CPUPer1000, p.CPUPer1000), strings.Join(each, ", ")))
	}
	return out
}

// roundRatios are g's CPU per request over p's, round by round (toolgate's
// round against the proxy's just before it); none when their rounds differ.
func roundRatios(g, p row) []float64 {
	if len(g.CPURounds) != len(p.CPURounds) {
		return nil
	}
	out := make([]float64, len(g.CPURounds))
	for i := range g.CPURounds {
		out[i] = ratio(g.CPURounds[i], p.CPURounds[i])
	}
	return out
}

// inProcessCPU describes the end-to-end Go benchmarks' CPU per request
// (their cpu-µs/op: the whole test process's user and system time, the
// client's and the simulator's included): toolgate's against the bare
// proxy's, and the hop's own (each less direct's). The same stream as a
// load point, without separate processes' noise.
func inProcessCPU(gbs []goBench) []string {
	var out []string
	for _, name := range []string{"BenchmarkChatStream", "BenchmarkChatStreamCold", "BenchmarkChatStream1000", "BenchmarkChatToolCalls"} {
		g, okG := goResult(gbs, name+"/toolgate")
		p, okP := goResult(gbs, name+"/reverseproxy")
		d, okD := goResult(gbs, name+"/direct")
		gc, pc, dc := g.Metrics["cpu-µs/op"], p.Metrics["cpu-µs/op"], d.Metrics["cpu-µs/op"]
		if !okG || !okP || !okD || gc == 0 || pc == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: CPU per request %.0f µs (proxy %.0f, direct %.0f): %.2f× the proxy's; the hop alone (less direct's) %.2f×",
			name, gc, pc, dc, gc/pc, ratio(gc-dc, pc-dc)))
	}
	return append(out, relayedChunks(gbs)...)
}

// relayedChunks are BenchmarkRun's chunks (as the gateway relays a chat
// stream: its steady middle taken by Normalizer.Run) beside
// BenchmarkChunk's (event by event), per chunk.
func relayedChunks(gbs []goBench) []string {
	var out []string
	for _, name := range []string{"text", "toolcall", "text-paced", "toolcall-paced"} {
		r, okR := goResult(gbs, "BenchmarkRun/"+name+"/chunks=1000")
		c, okC := goResult(gbs, "BenchmarkChunk/"+name+"/chunks=1000")
		if !okR || !okC {
			continue
		}
		out = append(out, fmt.Sprintf("a %s chunk as relayed (BenchmarkRun): %.0f ns, event by event (BenchmarkChunk) %.0f ns: %.2f×",
			name, r.NsPerOp/1000, c.NsPerOp/1000, ratio(r.NsPerOp, c.NsPerOp)))
	}
	return out
}

// baselineBin is -baseline's binary, "" without it.
var baselineBin string

// startAll starts the simulator with simArgs, the bare proxy and toolgate,
// each on a free loopback port, and returns them with their URLs.
func startAll(bin string, simArgs []string) (map[string]*exec.Cmd, map[string]string, error) {
	procs := map[string]*exec.Cmd{}
	urls := map[string]string{}
	simAddr, proxyAddr, gwAddr, adminAddr := freeAddr(), freeAddr(), freeAddr(), freeAddr()
	baseAddr, baseAdmin := freeAddr(), freeAddr()
	logDir := filepath.Join(os.TempDir(), "toolgate-bench")
	os.MkdirAll(logDir, 0o755)
	start := func(name, addr string, env []string, args ...string) error {
		path := filepath.Join(bin, args[0])
		if name == "baseline" {
			path = baselineBin
		}
		cmd := exec.Command(path, args[1:]...)
		cmd.Env = append(os.Environ(), env...)
		f, err := os.Create(filepath.Join(logDir, name+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w (run make build first)", name, err)
		}
		procs[name] = cmd
		return waitListening(addr)
	}
	err := start("direct", simAddr, nil, append([]string{"toolgate-sim", "--listen", simAddr}, simArgs...)...)
	if err == nil {
		err = start("proxy", proxyAddr, nil, "bench-proxy", "--listen", proxyAddr, "--upstream", "http://"+simAddr)
	}
	if err == nil {
		err = start("toolgate", gwAddr, []string{"BENCH_UPSTREAM=http://" + simAddr + "/v1"},
			"toolgate", "--config", "bench/toolgate.yaml", "--listen", gwAddr, "--admin-listen", adminAddr)
	}
	if err == nil && baselineBin != "" {
		err = start("baseline", baseAddr, []string{"BENCH_UPSTREAM=http://" + simAddr + "/v1"},
			"toolgate", "--config", "bench/toolgate.yaml", "--listen", baseAddr, "--admin-listen", baseAdmin)
	}
	if err != nil {
		stopAll(procs)
		return nil, nil, err
	}
	for name, addr := range map[string]string{"direct": simAddr, "proxy": proxyAddr, "toolgate": gwAddr, "baseline": baseAddr} {
		urls[name] = "http://" + addr + "/v1/chat/completions"
	}
	urls["toolgate-admin"], urls["baseline-admin"] = "http://"+adminAddr, "http://"+baseAdmin
	return procs, urls, nil
}

func stopAll(procs map[string]*exec.Cmd) {
	for _, c := range procs {
		c.Process.Signal(os.Interrupt)
	}
	for _, c := range procs {
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.Process.Kill()
			<-done
		}
	}
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListening(addr string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("nothing listens on %s", addr)
}

// startProfile fetches toolgate's CPU profile for d from its admin listener
// (server.pprof must be on) and, at the end, its allocation profile.
func startProfile(admin, dir, name string, d time.Duration) func() {
	os.MkdirAll(dir, 0o755)
	done := make(chan struct{})
	fetch := func(path, file string) { saveProfile(admin+path, filepath.Join(dir, file)) }
	go func() {
		fetch(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), name+".cpu.pprof")
		close(done)
	}()
	return func() {
		<-done
		fetch("/debug/pprof/allocs", name+".allocs.pprof")
	}
}

// saveProfile writes what url serves (a pprof profile) to file.
func saveProfile(url, file string) {
	os.MkdirAll(filepath.Dir(file), 0o755)
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	io.Copy(f, resp.Body)
	f.Close()
}

// goMem reads the Go memory gauges of toolgate's /metrics.
func goMem(admin string) map[string]float64 {
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && strings.HasPrefix(f[0], "go_memstats_") {
			out[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return out
}

// cpuSeconds is a process's user and system CPU time so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// status reads a kB field of /proc/PID/status.
func status(pid int, field string) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return n
		}
	}
	return 0
}

func rss(pid int) float64     { return status(pid, "VmRSS") }
func peakRSS(pid int) float64 { return status(pid, "VmHWM") }

// resetPeak resets a process's peak RSS (VmHWM), so each run reports its own.
func resetPeak(pid int) { os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) }

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown CPU"
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

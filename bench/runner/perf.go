package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// perfDir is -perf's directory, "" without it: the first round of each
// open load point records the proxy's and toolgate's CPU with Linux perf
// (on-CPU samples with call stacks, kernel included), and the runner prints
// where each spends its CPU per request.
var perfDir string

// perfHz is the sampling frequency of -perf's recordings.
const perfHz = 1999

// startPerf records pid's CPU for d with perf (cpu-clock samples with call
// stacks) into perfDir, as the point's target; the returned function waits
// for the recording to end and summarizes it for the round's requests. A
// missing or refused perf is reported then.
func startPerf(pid int, point, target string, d time.Duration) (finish func(requests int) (perfRow, error)) {
	os.MkdirAll(perfDir, 0o755)
	file := filepath.Join(perfDir, point+"."+target+".perf.data")
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", fmt.Sprint(perfHz), "-g",
		"-p", fmt.Sprint(pid), "-o", file, "--", "sleep", fmt.Sprintf("%.1f", d.Seconds()))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return func(int) (perfRow, error) {
			return perfRow{}, fmt.Errorf("perf: %w (Debian: apt-get install linux-perf)", err)
		}
	}
	return func(requests int) (perfRow, error) {
		if err := cmd.Wait(); err != nil {
			return perfRow{}, fmt.Errorf("perf record: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		return perfSummary(file, point, target, requests)
	}
}

// perfRow is where one target's CPU went in one recorded round, in µs of
// CPU per request: each sample is a 1/perfHz slice of one CPU's time.
type perfRow struct {
	Point    string  `json:"perf_point"`
	Target   string  `json:"target"`
	Requests int     `json:"requests"`
	Samples  int     `json:"samples"`
	Total    float64 `json:"us_per_request"`
	Kernel   float64 `json:"kernel_us"`
	// The parts, by the outermost frame of what ran: the HTTP handler (for
	// the proxy httputil.ReverseProxy, for toolgate the gateway), the
	// server around it (reading requests, ending responses), the client
	// transport's connection loops, the collector's workers, and the
	// scheduler's own (idle Ms looking for work, sysmon); what is left is
	// other (timer callbacks, for one).
	Handler   float64 `json:"handler_us"`
	Server    float64 `json:"server_us"`
	Transport float64 `json:"transport_us"`
	GC        float64 `json:"gc_us"`
	Scheduler float64 `json:"scheduler_us"`
	Other     float64 `json:"other_us"`
	// Heaviest are the largest parts of the handler: its call tree cut
	// where a call holds at most a quarter of the handler's samples (a
	// call that holds more is split into its callees and its own time),
	// calls of one function by different paths added together.
	Heaviest []perfFunc `json:"heaviest,omitempty"`
}

type perfFunc struct {
	Name string  `json:"name"`
	US   float64 `json:"us"`
}

// perfSample is one sample's call stack, innermost frame first, and
// whether it was taken in the kernel.
type perfSample struct {
	frames []string
	kernel bool
}

// readPerfScript parses `perf script -F ip,sym,dso` output: one block per
// sample, a frame per line ("<ip> <symbol> (<dso>)"), blocks separated
// by blank lines. A frame without a symbol is named by its address.
func readPerfScript(r io.Reader) ([]perfSample, error) {
	var out []perfSample
	var cur perfSample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	flush := func() {
		if len(cur.frames) > 0 {
			out = append(out, cur)
		}
		cur = perfSample{}
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			flush()
			continue
		}
		ip, rest, _ := strings.Cut(line, " ")
		sym, dso := rest, ""
		if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
			sym, dso = rest[:i], rest[i+2:len(rest)-1]
		}
		sym = strings.TrimSpace(sym)
		if sym == "" || sym == "[unknown]" {
			sym = ip
		}
		if len(cur.frames) == 0 {
			cur.kernel = strings.HasPrefix(dso, "[kernel")
		}
		cur.frames = append(cur.frames, sym)
	}
	flush()
	return out, sc.Err()
}

// handlerFrame is the frame every HTTP handler's call runs under.
const handlerFrame = "net/http.serverHandler.ServeHTTP"

// perfParts are the outermost frames that name a part, most specific
// first: a sample is counted in the first part one of its frames names.
var perfParts = []struct {
	part   string
	frames []string
}{
	{"handler", []string{handlerFrame}},
	{"server", []string{"net/http.(*conn).serve"}},
	{"transport", []string{"net/http.(*persistConn).readLoop", "net/http.(*persistConn).writeLoop"}},
	{"gc", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{"scheduler", []string{"runtime.mcall", "runtime.mstart", "runtime.mstart0", "runtime.mstart1", "runtime.sysmon", "runtime.park_m", "runtime.findRunnable"}},
}

// summarizePerf turns one recording's samples into a perfRow for n
// requests.
func summarizePerf(point, target string, samples []perfSample, n int) perfRow {
	row := perfRow{Point: point, Target: target, Requests: n, Samples: len(samples)}
	if n == 0 {
		return row
	}
	us := 1e6 / perfHz / float64(n) // one sample, per request
	parts := map[string]int{}
	tree := &perfNode{} // the handler's samples by call path, from the handler in
	for _, s := range samples {
		if s.kernel {
			row.Kernel += us
		}
		part := "other"
	find:
		for _, p := range perfParts {
			for _, f := range s.frames {
				if slices.Contains(p.frames, f) {
					part = p.part
					break find
				}
			}
		}
		parts[part]++
		if part == "handler" {
			tree.add(s.frames[:slices.Index(s.frames, handlerFrame)+1])
		}
	}
	row.Total = float64(len(samples)) * us
	row.Handler, row.Server, row.Transport = float64(parts["handler"])*us, float64(parts["server"])*us, float64(parts["transport"])*us
	row.GC, row.Scheduler, row.Other = float64(parts["gc"])*us, float64(parts["scheduler"])*us, float64(parts["other"])*us
	byPart := map[string]int{}
	tree.parts(tree.n/4, byPart)
	names := slices.Collect(maps.Keys(byPart))
	slices.SortFunc(names, func(a, b string) int {
		if byPart[a] != byPart[b] {
			return byPart[b] - byPart[a]
		}
		return strings.Compare(a, b)
	})
	for _, f := range names[:min(len(names), 12)] {
		row.Heaviest = append(row.Heaviest, perfFunc{Name: f, US: round3(float64(byPart[f]) * us)})
	}
	for _, v := range []*float64{&row.Total, &row.Kernel, &row.Handler, &row.Server, &row.Transport, &row.GC, &row.Scheduler, &row.Other} {
		*v = round3(*v)
	}
	return row
}

// perfSummary reads a recording with perf script and summarizes it.
func perfSummary(file, point, target string, n int) (perfRow, error) {
	cmd := exec.Command("perf", "script", "-F", "ip,sym,dso", "-i", file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return perfRow{}, err
	}
	if err := cmd.Start(); err != nil {
		return perfRow{}, fmt.Errorf("perf script: %w", err)
	}
	samples, perr := readPerfScript(out)
	io.Copy(io.Discard, out) // what the reader left (a line too long): Wait must not come before the end
	if err := cmd.Wait(); err != nil {
		return perfRow{}, fmt.Errorf("perf script: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if perr != nil {
		return perfRow{}, perr
	}
	return summarizePerf(point, target, samples, n), nil
}

// printPerf prints the recorded rounds' rows: one table for every target,
// then each target's heaviest functions under its handler.
func printPerf(rows []perfRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Printf("\nperf, the first round (cpu-clock samples at %d Hz): µs of CPU per request\n\n", perfHz)
	fmt.Println("| point | target | requests | total | kernel | handler | server | transport | GC | scheduler | other |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", r.Point, r.Target, r.Requests,
			r.Total, r.Kernel, r.Handler, r.Server, r.Transport, r.GC, r.Scheduler, r.Other)
	}
	for _, r := range rows {
		if len(r.Heaviest) == 0 {
			continue
		}
		fmt.Printf("\n%s, %s: the handler's largest parts (µs per request; calls over a quarter of it split into their callees)\n", r.Point, r.Target)
		for _, f := range r.Heaviest {
			fmt.Printf("  %7.1f  %s\n", f.US, f.Name)
		}
	}
}

// perfNode is a call in a tree of samples' call paths: its samples (its
// callees' included) and its callees by name.
type perfNode struct {
	n        int
	children map[string]*perfNode
}

// add counts one sample whose frames, innermost first, are under this
// node.
func (t *perfNode) add(frames []string) {
	t.n++
	for i := len(frames) - 1; i >= 0; i-- {
		if t.children == nil {
			t.children = map[string]*perfNode{}
		}
		c := t.children[frames[i]]
		if c == nil {
			c = &perfNode{}
			t.children[frames[i]] = c
		}
		c.n++
		t = c
	}
}

// parts adds to into the calls under t that hold at most limit samples,
// splitting any that holds more into its callees and its own samples
// (named "<function> (self)").
func (t *perfNode) parts(limit int, into map[string]int) {
	for name, c := range t.children {
		if c.n <= limit || len(c.children) == 0 {
			into[name] += c.n
			continue
		}
		self := c.n
		for _, cc := range c.children {
			self -= cc.n
		}
		if self > 0 {
			into[name+" (self)"] += self
		}
		c.parts(limit, into)
	}
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

// goBench is one Go benchmark's result, as `go test -bench` printed it.
type goBench struct {
	Name     string  `json:"go_benchmark"`
	NsPerOp  float64 `json:"ns_per_op"`
	AllocsOp float64 `json:"allocs_per_op"`
}

// goBenchmarks are the Go benchmarks behind the per-chunk and long-stream
// targets: the package and the -bench pattern.
var goBenchmarks = [][2]string{
	{"./internal/wire/", "BenchmarkChunk$"},
	{"./internal/gateway/", "BenchmarkChatStream1000$"},
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op.*?\s([\d.]+) allocs/op`)

// runGoBenchmarks runs goBenchmarks (with -benchmem) and parses their
// results; each benchmark's output is echoed.
func runGoBenchmarks() ([]goBench, error) {
	var out []goBench
	for _, gb := range goBenchmarks {
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", gb[1], "-benchmem", gb[0])
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go test -bench %s %s: %w\n%s", gb[1], gb[0], err, buf.Bytes())
		}
		os.Stdout.Write(buf.Bytes())
		sc := bufio.NewScanner(&buf)
		for sc.Scan() {
			m := benchLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			ns, _ := strconv.ParseFloat(m[2], 64)
			allocs, _ := strconv.ParseFloat(m[3], 64)
			out = append(out, goBench{Name: m[1], NsPerOp: ns, AllocsOp: allocs})
		}
	}
	return out, nil
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

package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The transcript's p50 difference pairs each round of toolgate with the
// proxy's round: its median is the median of the rounds' differences,
// not the difference of two medians taken from different rounds.
func TestTranscriptDifferencePaired(t *testing.T) {
	rows := []row{
		{Point: "transcript100-200", Target: "proxy", P50: 1.767, P50Rounds: []float64{1.685, 2.014, 1.767}},
		{Point: "transcript100-200", Target: "toolgate", P50: 2.087, P50Rounds: []float64{2.087, 2.174, 1.944}},
	}
	var got *check
	for _, c := range checks(rows, nil) {
		if c.Unit == "µs" {
			got = &c
		}
	}
	if got == nil {
		t.Fatal("no transcript check")
	}
	if got.Measured != 177 || len(got.Rounds) != 3 || got.Rounds[0] != 402 || got.Rounds[1] != 160 || got.Met {
		t.Errorf("measured %v µs, rounds %v; want 177 (the median of 402, 160 and 177)", got.Measured, got.Rounds)
	}
	// Without rounds (an older JSON line), the medians' difference.
	rows[0].P50Rounds, rows[1].P50Rounds = nil, nil
	for _, c := range checks(rows, nil) {
		if c.Unit == "µs" && c.Measured != 320 {
			t.Errorf("without rounds: measured %v µs, want 320", c.Measured)
		}
	}
}

// The in-process lines read the end-to-end benchmarks' cpu-µs/op, as go
// test prints it, and compare toolgate with the proxy whole and by the
// hop alone (each less the direct run's CPU).
func TestInProcessCPU(t *testing.T) {
	gbs := parsed(t,
		"BenchmarkChatToolCalls/direct-2      	   22111	    161134 ns/op	       180.0 cpu-µs/op	    9462 B/op	     108 allocs/op",
		"BenchmarkChatToolCalls/reverseproxy-2	    6639	    502113 ns/op	       580.0 cpu-µs/op	   50474 B/op	     213 allocs/op",
		"BenchmarkChatToolCalls/toolgate-2    	    5067	    615086 ns/op	       780.0 cpu-µs/op	   35819 B/op	     375 allocs/op",
		"BenchmarkChatStream1000/toolgate-2   	    5067	    615086 ns/op	    35819 B/op	     375 allocs/op", // no CPU metric: no line
	)
	got := inProcessCPU(gbs)
	want := "BenchmarkChatToolCalls: CPU per request 780 µs (proxy 580, direct 180): 1.34× the proxy's; the hop alone (less direct's) 1.50×"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
}

// A chunk relayed with Run is printed beside the same chunk event by
// event, for each stream both benchmarks ran.
func TestRelayedChunks(t *testing.T) {
	gbs := parsed(t,
		"BenchmarkChunk/toolcall/chunks=1000-2         	    3264	    343881 ns/op	 559.59 MB/s	     607 B/op	      13 allocs/op",
		"BenchmarkRun/toolcall/chunks=1000-2           	    4555	    261237 ns/op	 736.61 MB/s	     669 B/op	      15 allocs/op",
		"BenchmarkRun/text/chunks=1000-2               	    5684	    207663 ns/op	 723.28 MB/s	     179 B/op	       7 allocs/op", // no BenchmarkChunk/text: no line
	)
	got := relayedChunks(gbs)
	want := "a toolcall chunk as relayed (BenchmarkRun): 261 ns, event by event (BenchmarkChunk) 344 ns: 0.76×"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
}

func TestRatePoints(t *testing.T) {
	got, err := ratePoints(" 50, 1200,,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "stream50-50" || got[0].Rate != 50 || got[1].Name != "stream50-1200" || got[1].Rate != 1200 {
		t.Fatalf("got %+v", got)
	}
	for _, p := range got {
		if p.Kind != "open" || !p.Stream || string(p.Body) != string(streamBody) {
			t.Errorf("%s: not the 50-chunk stream point: %+v", p.Name, p)
		}
	}
	for _, bad := range []string{"fast", "0", "-5", "2.5", "1000000"} {
		if _, err := ratePoints(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got, err := ratePoints(""); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
}

func TestCPURatios(t *testing.T) {
	rows := []row{
		{Point: "stream50-50", Target: "direct", Rate: 50, CPUPer1000: 0.4},
		{Point: "stream50-50", Target: "proxy", Rate: 50, CPUPer1000: 0.5, CPURounds: []float64{0.5, 0.4}},
		{Point: "stream50-50", Target: "toolgate", Rate: 50, CPUPer1000: 0.75, CPURounds: []float64{0.75, 0.6}},
		{Point: "toolcalls-100", Target: "toolgate", Rate: 100, CPUPer1000: 2}, // no proxy row: no line
		{Point: "idle-streams-1000", Target: "proxy", Streams: 1000},
		{Point: "idle-streams-1000", Target: "toolgate", Streams: 1000}, // no CPU: no line
	}
	got := cpuRatios(rows)
	want := "| stream50-50 | 50 | 0.500 | 0.750 | 1.500× (1.50, 1.50) |"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
}

// FuzzRatePoints: any -rates list is either refused or gives one point
// per listed rate, each a 50-chunk stream at a rate from 1 to 100,000.
func FuzzRatePoints(f *testing.F) {
	for _, s := range []string{"50,600,1200", " 7 ,, 100000", "", "0", "1e3", "-4,5", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		got, err := ratePoints(list)
		var fields []string
		for f := range strings.SplitSeq(list, ",") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, f)
			}
		}
		if err != nil {
			if got != nil {
				t.Fatalf("%q: points %+v with the error %v", list, got, err)
			}
			return
		}
		if len(got) != len(fields) {
			t.Fatalf("%q: %d points for %d rates", list, len(got), len(fields))
		}
		for i, p := range got {
			want, aerr := strconv.Atoi(fields[i])
			if aerr != nil || want < 1 || want > 100000 || p.Rate != float64(want) || p.Name != fmt.Sprintf("stream50-%d", want) {
				t.Fatalf("%q: point %d is %+v for %q", list, i, p, fields[i])
			}
			if p.Kind != "open" || !p.Stream {
				t.Fatalf("%q: point %d is not an open stream point: %+v", list, i, p)
			}
		}
	})
}

// parsed is the go test -bench lines, parsed; it fails the test on a line
// it cannot parse.
func parsed(t *testing.T, lines ...string) []goBench {
	t.Helper()
	var gbs []goBench
	for _, line := range lines {
		g, ok := parseBenchLine(line)
		if !ok {
			t.Fatalf("not parsed: %q", line)
		}
		gbs = append(gbs, g)
	}
	return gbs
}

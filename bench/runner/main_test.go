package main

import "testing"

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
	var gbs []goBench
	for _, line := range []string{
		"BenchmarkChatToolCalls/direct-2      	   22111	    161134 ns/op	       180.0 cpu-µs/op	    9462 B/op	     108 allocs/op",
		"BenchmarkChatToolCalls/reverseproxy-2	    6639	    502113 ns/op	       580.0 cpu-µs/op	   50474 B/op	     213 allocs/op",
		"BenchmarkChatToolCalls/toolgate-2    	    5067	    615086 ns/op	       780.0 cpu-µs/op	   35819 B/op	     375 allocs/op",
		"BenchmarkChatStream1000/toolgate-2   	    5067	    615086 ns/op	    35819 B/op	     375 allocs/op", // no CPU metric: no line
	} {
		g, ok := parseBenchLine(line)
		if !ok {
			t.Fatalf("not parsed: %q", line)
		}
		gbs = append(gbs, g)
	}
	got := inProcessCPU(gbs)
	want := "BenchmarkChatToolCalls: CPU per request 780 µs (proxy 580, direct 180): 1.34× the proxy's; the hop alone (less direct's) 1.50×"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want [%q]", got, want)
	}
}

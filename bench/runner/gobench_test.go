package main

import (
	"regexp"
	"strings"
	"testing"
)

// The speed probe's pattern selects the text deltas read in bulk, not the
// paced ones nor the tool-call fragments (go test matches each level of a
// -bench pattern against the same level of a benchmark's name), and the
// speed is the fastest of its runs, per delta.
func TestSpeedProbe(t *testing.T) {
	levels := strings.Split(speedProbe.pattern, "/")
	matches := func(name string) bool {
		parts := strings.Split(name, "/")
		for i, l := range levels {
			if i < len(parts) && !regexp.MustCompile(l).MatchString(parts[i]) {
				return false
			}
		}
		return true
	}
	for name, want := range map[string]bool{
		speedResult:                             true,
		"BenchmarkChunk/text-paced/chunks=1000": false,
		"BenchmarkChunk/toolcall/chunks=1000":   false,
		"BenchmarkChunks/text/chunks=1000":      true, // unanchored, as go test matches: fastestTextDelta reads speedResult only
	} {
		if got := matches(name); got != want {
			t.Errorf("%s: matched %v, want %v", name, got, want)
		}
	}
	var gbs []goBench
	for _, l := range []string{
		"BenchmarkChunk/text/chunks=1000-2   2000   243555 ns/op   1017.83 MB/s   115 B/op   5 allocs/op",
		"BenchmarkChunk/text/chunks=1000-2   2000   218000 ns/op   1017.83 MB/s   115 B/op   5 allocs/op",
		"BenchmarkChunk/text-paced/chunks=1000-2   2000   100000 ns/op   1017.83 MB/s   115 B/op   5 allocs/op",
	} {
		g, ok := parseBenchLine(l)
		if !ok {
			t.Fatalf("%q not read", l)
		}
		gbs = append(gbs, g)
	}
	if got, ok := fastestTextDelta(gbs); !ok || got != 218 {
		t.Errorf("speed %v (%v), want 218 ns", got, ok)
	}
	if _, ok := fastestTextDelta(gbs[2:]); ok {
		t.Error("a speed without a text-delta result")
	}
}

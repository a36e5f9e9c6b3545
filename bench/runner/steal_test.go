package main

import (
	"math"
	"strings"
	"testing"
)

// /proc/stat's first line gives the steal as its eighth number; the share
// is of all the time counted between two readings, guest times excluded
// (user already counts them).
func TestStealShare(t *testing.T) {
	a, ok := parseCPUTimes("cpu  98020 0 13922 159428 234 0 2940 31450 0 0")
	if !ok {
		t.Fatal("a /proc/stat line not read")
	}
	b, ok := parseCPUTimes("cpu  98424 0 14107 168908 234 0 2986 33181 500 0")
	if !ok {
		t.Fatal("a /proc/stat line not read")
	}
	// 404 + 185 + 9480 + 46 + 1731 ticks in all, 1731 of them stolen.
	if got, want := stealShare(a, b), 1731.0/11846; math.Abs(got-want) > 1e-9 {
		t.Errorf("steal share %v, want %v", got, want)
	}
	if got := stealShare(b, a); got != 0 {
		t.Errorf("readings in the wrong order: %v, want 0", got)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if _, ok := parseCPUTimes(bad); ok {
			t.Errorf("%q read as CPU times", bad)
		}
	}
	// This machine's own /proc/stat, where there is one.
	if m := startSteal(); m.ok {
		if s := m.share(); s < 0 || s > 1 {
			t.Errorf("steal share %v of this machine", s)
		}
	}
}

// A round is run again only once, only above the limit, and never when it
// recorded a profile.
func TestAgain(t *testing.T) {
	defer func(v float64) { maxSteal = v }(maxSteal)
	maxSteal = 0.05
	for _, c := range []struct {
		steal    float64
		attempt  int
		recorded bool
		want     bool
	}{
		{0.20, 0, false, true},
		{0.05, 0, false, false},
		{0.20, 1, false, false},
		{0.20, 0, true, false},
		{0.01, 0, false, false},
	} {
		if got := again(c.steal, c.attempt, c.recorded); got != c.want {
			t.Errorf("again(%v, %d, %v) = %v, want %v", c.steal, c.attempt, c.recorded, got, c.want)
		}
	}
	maxSteal = 0
	if again(0.9, 0, false) {
		t.Error("-max-steal 0 runs a round again")
	}
}

// The summary counts the kept rounds over the limit, across points and
// targets, and says nothing where nothing was measured.
func TestStealLine(t *testing.T) {
	defer func(v float64) { maxSteal = v }(maxSteal)
	maxSteal = 0.05
	rows := []row{
		{Point: "a", Target: "proxy", StealRounds: []float64{0.01, 0.02, 0.30}},
		{Point: "a", Target: "toolgate", StealRounds: []float64{0.00, 0.07, 0.03}},
	}
	l := stealLine(rows, 0.125)
	for _, want := range []string{"3.0% (median)", "30.0% at most", "2 of 6 kept rounds over 5%", "the Go benchmarks 12.5%"} {
		if !strings.Contains(l, want) {
			t.Errorf("%q lacks %q", l, want)
		}
	}
	maxSteal = 0 // never run again: no count of rounds over it
	if l := stealLine(rows, -1); strings.Contains(l, "kept rounds over") || strings.Contains(l, "Go benchmarks") || !strings.Contains(l, "30.0% at most") {
		t.Errorf("-max-steal 0, no Go benchmarks: %q", l)
	}
	if l := stealLine([]row{{Point: "a"}}, -1); l != "" {
		t.Errorf("nothing measured, yet %q", l)
	}
}

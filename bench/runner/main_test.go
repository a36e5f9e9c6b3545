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

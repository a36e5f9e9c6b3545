package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A virtual machine shares its host's processors with other guests; the
// time the host gives them while this machine wanted to run is "steal",
// counted by the kernel in /proc/stat. Steal slows every process of a round
// at once and by an amount that varies from second to second: a round
// during which the host took a large share measures the host as much as
// the code. The runner reads the machine's steal around every round,
// reports it beside the results and runs a round again (once) when the
// host took more than -max-steal of the machine's time during it.

// cpuTimes is the machine's CPU time so far, in clock ticks: all of it,
// and the steal part.
type cpuTimes struct{ total, steal uint64 }

// readCPUTimes reads /proc/stat; ok is false where it cannot be read (not
// Linux), and every steal share is then 0.
func readCPUTimes() (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPUTimes(line)
}

// parseCPUTimes reads /proc/stat's first line: "cpu" then user, nice,
// system, idle, iowait, irq, softirq, steal (and guest times, which user
// and nice already count).
func parseCPUTimes(line string) (cpuTimes, bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		t.total += v
		if i == 7 {
			t.steal = v
		}
	}
	return t, true
}

// stealShare is the share of the machine's CPU time from a to b that the
// host gave to other guests (0 when nothing was counted).
func stealShare(a, b cpuTimes) float64 {
	if b.total <= a.total || b.steal < a.steal {
		return 0
	}
	return float64(b.steal-a.steal) / float64(b.total-a.total)
}

// stealMeter measures the steal of one stretch of time.
type stealMeter struct {
	start cpuTimes
	ok    bool
}

func startSteal() stealMeter {
	t, ok := readCPUTimes()
	return stealMeter{start: t, ok: ok}
}

// share is the steal share since the meter started.
func (m stealMeter) share() float64 {
	if !m.ok {
		return 0
	}
	t, ok := readCPUTimes()
	if !ok {
		return 0
	}
	return stealShare(m.start, t)
}

// maxSteal is -max-steal: a round during which the host took more than
// this share of the machine's CPU time is run again, once (0: never).
var maxSteal = 0.05

// again reports whether a round measured with the given steal share is run
// once more: only a first attempt, only over maxSteal, and never a round
// that recorded a profile (its recording is the round's).
func again(steal float64, attempt int, recorded bool) bool {
	return maxSteal > 0 && attempt == 0 && !recorded && steal > maxSteal
}

// stealLine summarizes the steal of the rounds a run kept (and of the Go
// benchmarks' phase, goSteal, when it ran: negative when not), for the
// line printed under the results; "" where nothing was measured.
func stealLine(rows []row, goSteal float64) string {
	var all []float64
	for _, r := range rows {
		all = append(all, r.StealRounds...)
	}
	if len(all) == 0 && goSteal < 0 {
		return ""
	}
	var parts []string
	if len(all) > 0 {
		l := fmt.Sprintf("the load points' rounds %.1f%% (median), %.1f%% at most", 100*median(all), 100*slices.Max(all))
		if maxSteal > 0 {
			over := 0
			for _, s := range all {
				if s > maxSteal {
					over++
				}
			}
			l += fmt.Sprintf("; %d of %d kept rounds over %.0f%% even when run again", over, len(all), 100*maxSteal)
		}
		parts = append(parts, l)
	}
	if goSteal >= 0 {
		parts = append(parts, fmt.Sprintf("the Go benchmarks %.1f%%", 100*goSteal))
	}
	return "The host's steal (its CPU time given to other guests while this machine wanted to run): " + strings.Join(parts, "; ") +
		". Where it is more than a few per cent, the latencies measure the host too: run again."
}

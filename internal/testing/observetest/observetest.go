// Package observetest reads metric values from a Prometheus registry, for
// tests: the one helper every package's tests use to check what a request
// moved.
package observetest

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/observe"
)

// Registry is a registry with toolgate's metrics in it.
type Registry struct {
	prometheus.Gatherer
	Metrics *observe.Metrics
}

// Value is the sum, over the series of the family name whose labels
// include every label in want (nil: every series), of each series' value:
// a counter's or a gauge's value, a histogram's or a summary's sample
// count. A family toolgate defines with no series yet is 0; a name it
// does not define fails the test (a renamed metric never passes a check
// that it is 0).
func Value(t testing.TB, r Registry, name string, want map[string]string) float64 {
	t.Helper()
	v, _ := values(t, r, name, want)
	return v
}

// Sum is, for a histogram family, the sum of the samples of the series
// whose labels include every label in want.
func Sum(t testing.TB, r Registry, name string, want map[string]string) float64 {
	t.Helper()
	_, s := values(t, r, name, want)
	return s
}

func values(t testing.TB, r Registry, name string, want map[string]string) (value, sum float64) {
	t.Helper()
	if !slices.Contains(r.Metrics.Names(), name) {
		t.Fatalf("toolgate has no metric %s", name)
	}
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, l := range m.GetLabel() {
					found = found || l.GetName() == k && l.GetValue() == v
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				value += m.GetCounter().GetValue()
			case m.Gauge != nil:
				value += m.GetGauge().GetValue()
			case m.Histogram != nil:
				value += float64(m.GetHistogram().GetSampleCount())
				sum += m.GetHistogram().GetSampleSum()
			case m.Summary != nil:
				value += float64(m.GetSummary().GetSampleCount())
				sum += m.GetSummary().GetSampleSum()
			case m.Untyped != nil:
				value += m.GetUntyped().GetValue()
			}
		}
	}
	return value, sum
}

package observe

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var documented = regexp.MustCompile("`(toolgate_[a-z_]+)[`{]")

// docs/operations.md's metrics table names every metric family toolgate
// defines, and no document names another.
func TestMetricsDocumented(t *testing.T) {
	inDoc := metricsIn(t, "../../docs/operations.md")
	names := NewMetrics(prometheus.NewRegistry()).Names()
	if len(names) < 20 {
		t.Fatalf("Names() = %v: fewer families than toolgate defines", names)
	}
	for _, name := range names {
		if !slices.Contains(inDoc, name) {
			t.Errorf("%s is not documented in docs/operations.md", name)
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) < 5 {
		t.Fatalf("docs: %v %v", docs, err)
	}
	for _, doc := range append(docs, "../../README.md") {
		for _, name := range metricsIn(t, doc) {
			if !slices.Contains(names, name) {
				t.Errorf("%s names %s, which toolgate does not define", doc, name)
			}
		}
	}
}

func metricsIn(t *testing.T, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range documented.FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	return names
}

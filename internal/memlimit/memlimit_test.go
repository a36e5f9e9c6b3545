package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// The cgroup's limit, v2 or v1, becomes the runtime's soft limit at
// Share; none ("max", v1's unlimited, no file) or GOMEMLIMIT set leaves
// the runtime's limit as it is.
func TestFromEnv(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	write := func(t *testing.T, file, v string) string {
		root := t.TempDir()
		p := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	none := func(string) string { return "" }
	for _, c := range []struct {
		name, file, value string
		want              int64
	}{
		{"v2, the chart's 512Mi", "memory.max", "536870912\n", 483183820},
		{"v1, the sidecar's 256Mi", "memory/memory.limit_in_bytes", "268435456\n", 241591910},
		{"v2 without a limit", "memory.max", "max\n", 0},
		{"v1 without a limit", "memory/memory.limit_in_bytes", "9223372036854771712\n", 0},
		{"garbage", "memory.max", "lots", 0},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		got := FromEnv(none, write(t, c.file, c.value))
		if got != c.want || (c.want > 0 && debug.SetMemoryLimit(-1) != c.want) {
			t.Errorf("%s: set %d, want %d (runtime %d)", c.name, got, c.want, debug.SetMemoryLimit(-1))
		}
	}
	if got := FromEnv(func(k string) string { return map[string]string{"GOMEMLIMIT": "100MiB"}[k] }, write(t, "memory.max", "536870912")); got != 0 {
		t.Errorf("GOMEMLIMIT set: %d", got)
	}
	if got := FromEnv(none, t.TempDir()); got != 0 {
		t.Errorf("no cgroup: %d", got)
	}
}

package wiretest

import (
	"runtime"
	"testing"
)

// AllocPerByte runs fn in b's loop on a body of n bytes and reports, as
// alloc-per-body-byte, every byte the process allocated per run over n:
// what handling a request costs in memory against its size (reported
// with its bytes per second and allocations).
func AllocPerByte(b *testing.B, n int, fn func()) {
	b.SetBytes(int64(n))
	b.ReportAllocs()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	for b.Loop() {
		fn()
	}
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.TotalAlloc-before)/float64(b.N)/float64(n), "alloc-per-body-byte")
}

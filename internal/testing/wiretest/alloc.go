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

// MarginalAllocPerByte runs small and large, the same request on bodies
// of n and m bytes (m > n), in b's loop and reports, as
// marginal-alloc-per-byte, what each byte more of the body costs in
// memory: the bytes allocated for large less those for small, over m-n.
// A per-request cost (buffers of a fixed size, the response) is out of
// it; what grows with the body is in. alloc-per-body-byte is small's, as
// AllocPerByte reports it.
func MarginalAllocPerByte(b *testing.B, n int, small func(), m int, large func()) {
	b.SetBytes(int64(n + m))
	b.ReportAllocs()
	var ms runtime.MemStats
	var forSmall, forLarge uint64
	for b.Loop() {
		runtime.ReadMemStats(&ms)
		start := ms.TotalAlloc
		small()
		runtime.ReadMemStats(&ms)
		mid := ms.TotalAlloc
		large()
		runtime.ReadMemStats(&ms)
		forSmall, forLarge = forSmall+mid-start, forLarge+ms.TotalAlloc-mid
	}
	runs := float64(b.N)
	b.ReportMetric(float64(forSmall)/runs/float64(n), "alloc-per-body-byte")
	b.ReportMetric((float64(forLarge)-float64(forSmall))/runs/float64(m-n), "marginal-alloc-per-byte")
}

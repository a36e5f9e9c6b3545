// Package faults is toolgate's fault suite: a gateway in front of an
// upstream that misbehaves on purpose — resets and stalls, oversized and
// malformed events, rate limits, clients that leave at random points — and
// a load run with a share of faulted streams. Each fault checks what the
// client receives, the metric that counts it, that no goroutine is left
// behind and that memory returns to its baseline.
//
//	go test ./internal/testing/faults              # small: part of make test
//	go test ./internal/testing/faults -faults.full # make faults: 500 requests a fault, 2,000 streams for 60 s
//
// It has no non-test code: the suite lives in faults_test.go.
package faults

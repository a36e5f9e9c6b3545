package wire_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/wire"
)

// BenchmarkHostileDecode decodes and re-encodes each worst-case request
// shape of 10 MB (sim.HostileShapes); "plain" is the baseline the others
// are compared with. Each must stay within a small multiple of it: the
// decoder is linear in the body's size whatever its shape.
func BenchmarkHostileDecode(b *testing.B) {
	for _, s := range sim.HostileShapes("m", 10<<20) {
		b.Run(s.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s.Body)))
			for b.Loop() {
				req, err := wire.DecodeRequest(s.Body)
				if err != nil {
					b.Fatal(err)
				}
				req.SetMessages(req.Messages)
				if _, err := req.Encode("m2"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

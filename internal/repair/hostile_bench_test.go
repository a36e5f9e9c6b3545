package repair_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/repair"
	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/wire"
)

// BenchmarkHostileRepair runs every request normalization and repair over
// each worst-case request shape of 10 MB (sim.HostileShapes), then encodes
// the result: the stages are linear in the transcript's size whatever its
// shape ("plain" is the baseline).
func BenchmarkHostileRepair(b *testing.B) {
	steps := repair.ToolCallSteps{StringifyArguments: true, SynthesizeIDs: true, DedupeCallIDs: true, ToolCallContent: repair.ContentEmpty}
	for _, s := range sim.HostileShapes("m", 10<<20) {
		req, err := wire.DecodeRequest(s.Body)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(s.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s.Body)))
			for b.Loop() {
				msgs, _ := repair.FixToolCalls(req.Messages, steps)
				msgs, _ = repair.Repair(msgs)
				req.SetMessages(msgs)
				if _, err := req.Encode("m"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package repair

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/wire"
)

// benchBody builds a request of n messages (about 500 bytes each: rounds of
// user, assistant with one call, tool reply). With broken set, every third
// round's reply is missing and every fifth arrives after the next user
// message, so repair has work to do.
func benchBody(n int, broken bool) []byte {
	text := strings.Repeat("lorem ipsum dolor sit amet ", 24)
	ms := []string{`{"role":"system","content":"You are a coding agent."}`}
	var late string
	for round := 0; len(ms) < n; round++ {
		ms = append(ms, fmt.Sprintf(`{"role":"user","content":"%s %d"}`, text, round))
		if late != "" {
			ms = append(ms, late)
			late = ""
		}
		id := fmt.Sprintf("call_%d", round%4) // ids reused across rounds, as providers do
		ms = append(ms, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"f%d.md\"}"}}]}`, id, round))
		reply := fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"%s"}`, id, text)
		switch {
		case broken && round%3 == 2:
		case broken && round%5 == 4:
			late = reply
		default:
			ms = append(ms, reply)
		}
	}
	return []byte(`{"model":"m","stream":true,"messages":[` + strings.Join(ms[:n], ",") + `]}`)
}

// BenchmarkRepair measures Repair alone; a paired transcript must not
// allocate.
func BenchmarkRepair(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, broken := range []bool{false, true} {
			req, err := wire.DecodeRequest(benchBody(n, broken))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("msgs=%d/broken=%v", n, broken), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Repair(req.Messages)
				}
			})
		}
	}
}

// BenchmarkDecodeRepairEncode measures the request path around repair:
// decode the body, normalize, repair, encode the body sent upstream.
func BenchmarkDecodeRepairEncode(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, broken := range []bool{false, true} {
			body := benchBody(n, broken)
			b.Run(fmt.Sprintf("msgs=%d/broken=%v/bytes=%d", n, broken, len(body)), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					requestPath(b, body)
				}
			})
		}
	}
}

// BenchmarkSimTranscript is the request path of make bench's transcript
// load point, in a loop: the simulator's 100-message transcript (short
// messages, one call unanswered) decoded, repaired (the seal), and all of
// it with the encoding of the body sent.
func BenchmarkSimTranscript(b *testing.B) {
	body := sim.Transcript("sim-text", 100, 16)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := wire.DecodeRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	req, err := wire.DecodeRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("repair", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, _ := FixToolCalls(req.Messages, benchSteps)
			if _, rep := Repair(msgs); len(rep.Sealed) != 1 || rep.Sealed[0].CallID != "call_16" {
				b.Fatalf("sealed %+v, want the one unanswered call, call_16", rep.Sealed)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			requestPath(b, body)
		}
	})
}

// benchSteps are the tool-call fixes the gateway's default route applies.
var benchSteps = ToolCallSteps{StringifyArguments: true, SynthesizeIDs: true, DedupeCallIDs: true}

// requestPath is the gateway's request path around repair: decode the
// body, fix and repair its transcript, encode the body sent upstream.
func requestPath(b *testing.B, body []byte) {
	req, err := wire.DecodeRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	msgs, fixes := FixToolCalls(req.Messages, benchSteps)
	msgs, rep := Repair(msgs)
	if fixes.Any() || !rep.Empty() {
		req.SetMessages(msgs)
	}
	if _, err := req.Encode("m"); err != nil {
		b.Fatal(err)
	}
}

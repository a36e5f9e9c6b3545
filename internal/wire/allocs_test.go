package wire

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
)

// The per-chunk path after reading — Normalizer.Chunk, then Writer.Send —
// allocates nothing for a text chunk and nothing for a tool-call
// argument fragment once the stream is under way: a change that adds an
// allocation per chunk (the hot path of every stream) fails here, not
// only in a benchmark someone has to read.
func TestChunkAllocs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tool  bool
		allow float64
	}{{"text", false, 0}, {"tool-call fragment", true, 0}} {
		n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
		w := NewWriter(discard{})
		head := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
		open := `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write","arguments":""}}]},"finish_reason":null}]}`
		chunk := []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}`)
		if tc.tool {
			chunk = []byte(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"tok "}}]},"finish_reason":null}]}`)
		}
		for _, d := range []string{head, open} {
			if !tc.tool && d == open {
				continue
			}
			if _, _, err := n.Chunk([]byte(d)); err != nil {
				t.Fatal(err)
			}
		}
		send := func() {
			out, ok, err := n.Chunk(chunk)
			if err != nil || !ok {
				panic(fmt.Sprint(ok, err))
			}
			w.Send(out)
		}
		for range 100 { // warm: buffers grown to their size
			send()
		}
		if got := testing.AllocsPerRun(1000, send); got > tc.allow {
			t.Errorf("%s: %v allocations per chunk, at most %v", tc.name, got, tc.allow)
		}
	}
}

// The whole per-chunk path from the upstream's bytes — Events, then
// Normalizer.Chunk, then Writer.Send — allocates per stream, never per
// chunk: a stream of 2,000 chunks allocates what one of 200 does. A tool
// call's arguments, which the collector must hold, go into a buffer an
// earlier stream's call grew (Collector.recycle): without it, the longer
// stream's buffer would regrow by doubling, some twenty allocations more.
// A stream whose events arrive one read each, the reader letting go of
// its buffer and the normalizer of its scratch before every read (as an
// idle stream does), allocates no more than one read in bulk.
func TestStreamAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: make test runs this test without it too")
	}
	for _, tc := range []struct {
		name  string
		tool  bool
		allow float64
	}{{"text", false, 0}, {"tool-call fragments", true, 4}} {
		allocs := func(chunks int, resting bool) float64 {
			body := benchStream(chunks, tc.tool)
			r := &eventAtATime{}
			return testing.AllocsPerRun(5, func() {
				r.rest, r.whole = body, !resting
				n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
				w := NewWriter(discard{})
				opts := ReadOptions{}
				if resting {
					opts.BeforeWait = n
				}
				for ev, err := range Events(context.Background(), r, opts) {
					if err != nil || ev.Done {
						break
					}
					if out, ok, err := n.Chunk(ev.Data); err == nil && ok {
						w.Send(out)
					}
				}
				n.Release()
			})
		}
		short, long := allocs(200, false), allocs(2000, false)
		if long-short > tc.allow {
			t.Errorf("%s: %v allocations for 2,000 chunks, %v for 200: %.3f per chunk", tc.name, long, short, (long-short)/1800)
		}
		if rested := allocs(2000, true); rested > long {
			t.Errorf("%s: %v allocations for 2,000 chunks resting between events, %v in bulk", tc.name, rested, long)
		}
		t.Logf("%s: %v allocations per stream of 200 chunks, %v per stream of 2,000", tc.name, short, long)
	}
}

// eventAtATime serves a stream in reads of at most one event each, or
// all of it as the reader asks (whole).
type eventAtATime struct {
	rest  string
	whole bool
}

func (e *eventAtATime) Read(p []byte) (int, error) {
	if e.rest == "" {
		return 0, io.EOF
	}
	end := len(e.rest)
	if i := strings.Index(e.rest, "\n\n"); i >= 0 && !e.whole {
		end = i + 2
	}
	n := copy(p, e.rest[:end])
	e.rest = e.rest[n:]
	return n, nil
}

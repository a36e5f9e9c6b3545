package wire

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// discard is a Sink that writes to io.Discard.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Flush() error                { return nil }

// benchStream is n events of one kind followed by a finish and [DONE].
func benchStream(n int, tool bool) string {
	var b strings.Builder
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	if tool {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write","arguments":""}}]},"finish_reason":null}]}` + "\n\n")
	}
	for i := range n {
		if tool {
			fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"tok%d "}}]},"finish_reason":null}]}`+"\n\n", i)
		} else {
			fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"tok%d "},"finish_reason":null}]}`+"\n\n", i)
		}
	}
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}

// BenchmarkChunk measures the per-chunk path of a stream: read (go-sse),
// restream (collector), write (sse message), for 1000 text deltas and for
// 1000 tool-call argument fragments. ns/op and allocs/op are per stream of
// 1000 chunks: divide by 1000 for one chunk.
func BenchmarkChunk(b *testing.B) {
	for _, tool := range []bool{false, true} {
		body := benchStream(1000, tool)
		name := "text"
		if tool {
			name = "toolcall"
		}
		b.Run(name+"/chunks=1000", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rs := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
				w := NewWriter(discard{})
				for ev, err := range Events(context.Background(), strings.NewReader(body), ReadOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					if ev.Done {
						break
					}
					out, ok, err := rs.Chunk(view(ev.Data))
					if err != nil {
						b.Fatal(err)
					}
					if ok {
						w.Send(out)
					}
				}
			}
		})
	}
}

// BenchmarkEvents measures go-sse's reading alone (wire.Events) over the
// BenchmarkChunk streams, against a reference reader that splits the same
// bytes into data payloads in place (a bufio.Reader of 4 KB, no copy, no
// allocation): the difference is what reading through go-sse costs per
// event — it copies each event twice (bufio.Scanner.Text, then the data
// into a strings.Builder), two allocations, and it takes no buffer from
// its caller. ns/op and allocs/op are per 1000 events.
func BenchmarkEvents(b *testing.B) {
	for _, tool := range []bool{false, true} {
		body := benchStream(1000, tool)
		name := "text"
		if tool {
			name = "toolcall"
		}
		b.Run(name+"/go-sse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				for ev, err := range Events(context.Background(), strings.NewReader(body), ReadOptions{}) {
					if err != nil || ev.Done {
						break
					}
				}
			}
		})
		b.Run(name+"/reference", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			r := bufio.NewReaderSize(strings.NewReader(body), 4096)
			for b.Loop() {
				r.Reset(strings.NewReader(body))
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						break
					}
					if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && string(data) == "[DONE]\n" {
						break
					}
				}
			}
		})
	}
}

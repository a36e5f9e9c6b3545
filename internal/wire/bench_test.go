package wire

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	sse "github.com/tmaxmax/go-sse"
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

// BenchmarkChunk measures the per-chunk path of a stream: read (Events),
// restream (collector), write (sse message), for 1000 text deltas and for
// 1000 tool-call argument fragments. ns/op and allocs/op are per stream of
// 1000 chunks: divide by 1000 for one chunk. The -paced variants read
// one event per read of the source, the Normalizer resting before each
// (ReadOptions.BeforeWait), as a stream does whose model sends its chunks
// one at a time — every real provider's.
func BenchmarkChunk(b *testing.B) { benchmarkStreams(b, false) }

// BenchmarkRun is BenchmarkChunk as the gateway relays a chat stream: the
// Normalizer's Run takes the events its template fits straight from the
// reader's buffer to the Writer's (ReadOptions.Run), the rest go event by
// event. A read of one whole event (-paced) is Run's as well.
func BenchmarkRun(b *testing.B) { benchmarkStreams(b, true) }

func benchmarkStreams(b *testing.B, run bool) {
	for _, paced := range []bool{false, true} {
		for _, tool := range []bool{false, true} {
			body := benchStream(1000, tool)
			name := "text"
			if tool {
				name = "toolcall"
			}
			if paced {
				name += "-paced"
			}
			b.Run(name+"/chunks=1000", func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					rs := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
					w := NewWriter(discard{})
					var src io.Reader = strings.NewReader(body)
					opts := ReadOptions{}
					if paced {
						src, opts.BeforeWait = &eventPerRead{rest: body}, rs
					}
					if run {
						opts.Run = &runner{n: rs, w: w}
					}
					for ev, err := range Events(context.Background(), src, opts) {
						if err != nil {
							b.Fatal(err)
						}
						if ev.Done {
							break
						}
						out, ok, err := rs.Chunk(ev.Data)
						if err != nil {
							b.Fatal(err)
						}
						if ok {
							w.Send(out)
						}
					}
					rs.Release()
				}
			})
		}
	}
}

// BenchmarkParallelCalls measures the normalizer alone over an answer of
// four parallel calls of 250 argument fragments each, with keys sorted (as
// the simulator sends them: every fragment rewritten), one call after
// another and interleaved (A43). ns/op is per answer of 1,000 fragments;
// full-paths/op counts the chunks that took the full path rather than the
// template.
func BenchmarkParallelCalls(b *testing.B) {
	for _, interleaved := range []bool{false, true} {
		name := "one-after-another"
		if interleaved {
			name = "interleaved"
		}
		payloads := payloadsOf(parallelStream(4, 250, 0, 1, true, interleaved))
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			full := 0
			for b.Loop() {
				n := NewNormalizer(Options{Quirks: AllQuirks(), SingleChoice: true})
				for _, p := range payloads {
					if _, _, err := n.Chunk(p); err != nil {
						b.Fatal(err)
					}
				}
				full = n.fullPaths
				n.Release()
			}
			b.ReportMetric(float64(full), "full-paths/op")
		})
	}
}

// eventPerRead returns one event (up to its blank line) per Read.
type eventPerRead struct{ rest string }

func (r *eventPerRead) Read(p []byte) (int, error) {
	if r.rest == "" {
		return 0, io.EOF
	}
	end := strings.Index(r.rest, "\n\n") + 2
	if end < 2 {
		end = len(r.rest)
	}
	n := copy(p, r.rest[:end])
	r.rest = r.rest[n:]
	return n, nil
}

// BenchmarkEvents measures reading alone over the BenchmarkChunk streams:
// wire.Events (toolgate's reader, views into one pooled buffer), go-sse's
// reader (the reference it is tested against: it copies each event twice,
// bufio.Scanner.Text then the data into a strings.Builder, and takes no
// buffer from its caller), and a lower bound that only splits the bytes in
// place (a bufio.Reader of 4 KB, no SSE rules). ns/op and allocs/op are per
// 1000 events.
func BenchmarkEvents(b *testing.B) {
	for _, tool := range []bool{false, true} {
		body := benchStream(1000, tool)
		name := "text"
		if tool {
			name = "toolcall"
		}
		b.Run(name+"/toolgate", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			r := strings.NewReader(body)
			for b.Loop() {
				r.Reset(body)
				for ev, err := range Events(context.Background(), r, ReadOptions{}) {
					if err != nil || ev.Done {
						break
					}
				}
			}
		})
		b.Run(name+"/go-sse", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			r := strings.NewReader(body)
			for b.Loop() {
				r.Reset(body)
				for ev, err := range sse.Read(r, &sse.ReadConfig{MaxEventSize: DefaultMaxEventSize}) {
					if err != nil || ev.Data == "[DONE]" {
						break
					}
				}
			}
		})
		b.Run(name+"/split-only", func(b *testing.B) {
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

// BenchmarkEventsLineEnds reads the tool-call stream of BenchmarkEvents
// with each line end written as LF, CRLF and CR, and with every data line
// cut into one-byte CR lines (185,399 lines of 1.3 MB instead of 2,008 of
// 192 KB). The reader searches each byte at most once for each line-end
// byte, so a CR or CRLF stream costs about what an LF stream does, and
// short lines add the cost of their number (about 20 ns a line), not a
// search of the rest of the buffer for each. ns/op is per stream.
func BenchmarkEventsLineEnds(b *testing.B) {
	lf := benchStream(1000, true)
	var short strings.Builder
	for _, line := range strings.Split(lf, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && len(data) > 1 && data != "[DONE]" {
			short.WriteString("data: " + data[:1])
			for _, c := range []byte(data[1:]) {
				short.WriteString("\rdata:" + string(c))
			}
			short.WriteString("\r")
			continue
		}
		short.WriteString(line + "\r")
	}
	for _, c := range []struct{ name, body string }{
		{"lf", lf},
		{"crlf", strings.ReplaceAll(lf, "\n", "\r\n")},
		{"cr", strings.ReplaceAll(lf, "\n", "\r")},
		{"cr-short-lines", short.String()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			r := strings.NewReader(c.body)
			for b.Loop() {
				r.Reset(c.body)
				n := 0
				for ev, err := range Events(context.Background(), r, ReadOptions{}) {
					if err != nil {
						b.Fatal(err)
					}
					if n++; ev.Done {
						break
					}
				}
				if n != 1004 {
					b.Fatalf("%d events, want 1004", n)
				}
			}
		})
	}
}

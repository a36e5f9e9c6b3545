package wire_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sse "github.com/tmaxmax/go-sse"

	"github.com/toolgate/toolgate/internal/sim"
	"github.com/toolgate/toolgate/internal/wire"
)

// The event reader is toolgate's own (it yields views into one buffer;
// github.com/tmaxmax/go-sse copies every event twice and was 41% of the
// gateway's CPU on tool-call streams). go-sse stays as the reference it
// must agree with: the tests below feed both the same bytes, split at
// read boundaries, and require the same events and the same error.

// ev is one event as the comparison sees it.
type ev struct{ Type, Data string }

// errCut is the read error both readers must report.
var errCut = errors.New("connection reset")

// splitReader serves data in pieces whose sizes come from cuts (0: an
// empty read), then fails with final (io.EOF or errCut).
type splitReader struct {
	data, cuts []byte
	final      error
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.final
	}
	n := len(r.data)
	if len(r.cuts) > 0 {
		n = int(r.cuts[0])
		r.cuts = r.cuts[1:]
	}
	n = min(n, len(r.data), len(p))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// ours reads with wire.Events. Events without data are not compared:
// the consumer skips them, and go-sse dispatches some the specification
// does not (see reference).
func ours(r io.Reader) (evs []ev, err error) {
	for e, err := range wire.Events(context.Background(), r, wire.ReadOptions{MaxEventSize: 1 << 20}) {
		if err != nil {
			return evs, err
		}
		if len(e.Data) > 0 {
			evs = append(evs, ev{string(e.Type), string(e.Data)})
		}
	}
	return evs, nil
}

// leadingBOM finds a BOM after blank lines at the start of a stream.
var leadingBOM = regexp.MustCompile(`^[\r\n]+\x{FEFF}`)

// reference reads with go-sse, stopping at [DONE] as Events does. Where
// go-sse departs from the specification the input or the output is
// adjusted, each case named:
//
//   - go-sse dispatches an event that has an "event" or "id" field and no
//     "data" field, with empty data; the specification's dispatch step
//     does not ("If the data buffer is an empty string, set the data buffer
//     and the event type buffer to the empty string and return"). Events
//     with empty data are left out on both sides.
//   - go-sse removes a BOM at the start of its first event, after blank
//     lines; the specification ignores one only as the stream's first
//     character (the decode step). Such a BOM is replaced, for go-sse, by
//     three bytes that are no BOM, a line end or a colon, which leave the
//     line an unknown field for both.
func reference(data []byte, read func([]byte) io.Reader) (evs []ev, err error) {
	if loc := leadingBOM.FindIndex(data); loc != nil && !bytes.HasPrefix(data, []byte("\uFEFF")) {
		data = bytes.Clone(data)
		copy(data[loc[1]-3:], "\x01\x01\x01")
	}
	for e, err := range sse.Read(read(data), &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			return evs, err
		}
		if e.Data != "" {
			evs = append(evs, ev{e.Type, e.Data})
		}
		if e.Data == "[DONE]" {
			break
		}
	}
	return evs, nil
}

// cut serves data in pieces of the sizes in cuts (0: an empty read),
// then fails with errCut if fail, else ends.
func cut(cuts []byte, fail bool) func([]byte) io.Reader {
	final := io.EOF
	if fail {
		final = errCut
	}
	return func(data []byte) io.Reader { return &splitReader{data: data, cuts: cuts, final: final} }
}

// bursts serves data in reads that, by turns from cuts, fill all they are
// given (an even cut) or bring the cut's size (an odd one), again and
// again: the reader takes its burst buffer after a filled read and goes
// back to a small one after a short one, in any order and mid-event.
func bursts(cuts []byte) func([]byte) io.Reader {
	return func(data []byte) io.Reader { return &burstReader{data: data, cuts: cuts} }
}

type burstReader struct {
	data, cuts []byte
	k          int
}

func (r *burstReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.cuts) > 0 {
		if c := r.cuts[r.k%len(r.cuts)]; c%2 == 1 {
			n = int(c)
		}
		r.k++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// halves serves data in two reads, the first of k bytes.
func halves(k int) func([]byte) io.Reader {
	return func(data []byte) io.Reader {
		k := min(k, len(data))
		return io.MultiReader(bytes.NewReader(data[:k]), bytes.NewReader(data[k:]))
	}
}

// agree reads data with both readers, each through read, and fails on any
// difference.
func agree(t *testing.T, data []byte, read func([]byte) io.Reader) {
	t.Helper()
	agreeRead(t, data, read, read)
}

// agreeRead is agree with go-sse reading through refRead and Events
// through read.
func agreeRead(t *testing.T, data []byte, refRead, read func([]byte) io.Reader) {
	t.Helper()
	want, wantErr := reference(data, refRead)
	got, gotErr := ours(read(data))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events differ for %q (-go-sse +toolgate):\n%s", data, diff)
	}
	if errors.Is(wantErr, errCut) != errors.Is(gotErr, errCut) || (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("errors differ for %q: go-sse %v, toolgate %v", data, wantErr, gotErr)
	}
	if gotErr != nil {
		if _, ok := errors.AsType[*wire.StreamError](gotErr); !ok {
			t.Fatalf("error %v is not a *wire.StreamError", gotErr)
		}
	}
}

// FuzzEventsMatchGoSSE feeds arbitrary bytes, served in arbitrary pieces
// and ended by EOF or a read error, to both readers.
func FuzzEventsMatchGoSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n", "data:x\r\n\r\n", ": c\n\nevent: ping\n\n", "data: a\ndata: b\n\n",
		"retry: 10\nid: 1\n\n", "data: [DONE]", "\r\r\n\n", "data: \xff\xfe\n\n", "\uFEFFdata: x\n\n",
		"\n\uFEFFdata: x\n\n", "data\n\ndata:\n\n", "event: e\ndata: x\r\rdata: y\r\n\r\n", "data: x\r", ": keepalive\r\n\r\n",
		"id: 1\x00\ndata: x\n\n", "event: a\n\ndata: b\n\n", "data:  two spaces\n\n", "DATA: x\n\nData: y\n\n",
	} {
		f.Add([]byte(s), []byte{1, 2, 3, 0, 5}, false)
		f.Add([]byte(s), []byte{}, true)
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte, fail bool) {
		agree(t, data, cut(cuts, fail))
		if len(data) > 0 && len(data) < 1<<10 {
			// Repeated past the reader's small buffer, in reads that fill
			// it and reads that do not (go-sse, whose cost grows with the
			// square of the reads an event spans, reads it whole).
			agreeRead(t, bytes.Repeat(data, 1+(20<<10)/len(data)), cut(nil, false), bursts(cuts))
		}
	})
}

// realistic are the streams toolgate meets: every simulator script (the
// quirk scripts of docs/quirks.md section A among them, A34 comments and
// keep-alives, A36 CR and CRLF, A37 multi-line data), the Messages API's
// named events, and the normalizer's golden inputs.
func realistic(t *testing.T) map[string][]byte {
	t.Helper()
	up := httptest.NewServer(sim.New(sim.Options{}))
	defer up.Close()
	streams := map[string][]byte{}
	post := func(path, model string) []byte {
		tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
		if path == "/v1/messages" {
			tools = `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
		}
		body := `{"model":"` + model + `","stream":true,"max_tokens":1024,"messages":[{"role":"user","content":"weather in Paris?"}],` + tools + `}`
		req, _ := http.NewRequest(http.MethodPost, up.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %v %s", path, model, resp.StatusCode, err, b)
		}
		return b
	}
	for _, name := range sim.QuirkNames() {
		streams["sim-q-"+name] = post("/v1/chat/completions", "sim-q-"+name)
	}
	for _, model := range []string{"sim-text", "sim-tool", "sim-deepseek"} {
		streams[model] = post("/v1/chat/completions", model)
	}
	streams["messages"] = post("/v1/messages", "sim-claude")
	maps.Copy(streams, wire.GoldenStreams(t))
	return streams
}

// Every realistic stream reads the same through both readers, whole, one
// byte per read, and split in two at every byte.
func TestEventsMatchGoSSE(t *testing.T) {
	streams := realistic(t)
	if len(streams) < 40 {
		t.Fatalf("%d streams: fewer than the simulator and golden files hold", len(streams))
	}
	ones := bytes.Repeat([]byte{1}, 1<<16)
	for name, data := range streams {
		t.Run(name, func(t *testing.T) {
			if got, _ := ours(bytes.NewReader(data)); len(got) == 0 {
				t.Fatalf("no events in %q", data)
			}
			agree(t, data, cut(nil, false))
			agree(t, data, cut(ones, true))
			for k := range len(data) {
				agree(t, data, halves(k))
			}
		})
	}
}

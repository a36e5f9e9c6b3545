package gateway

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/toolgate/toolgate/internal/auth"
	"github.com/toolgate/toolgate/internal/wire"
)

// IntakeError is a request refused while its body was being received, for
// what the body is rather than what it says: its media type or encoding,
// its size, or how long it takes to arrive. It is raised before the body
// is decoded, and the connection is closed after the answer (whatever of
// the body is still on its way is not read).
type IntakeError struct {
	Kind IntakeKind
	Msg  string
	Err  error
}

// IntakeKind classifies an IntakeError.
type IntakeKind int

// Kinds of intake error.
const (
	IntakeMediaType   IntakeKind = iota // 415: a Content-Type that is not JSON
	IntakeEncoding                      // 415: a Content-Encoding other than gzip, deflate or zstd
	IntakeBadEncoding                   // 400: a body that its Content-Encoding does not decode
	IntakeTooLarge                      // 413: over server.max_body_bytes (after decoding)
	IntakeTimeout                       // 408: not received within server.read_body_timeout
	IntakeIncomplete                    // 400: the body broke off (a chunked body cut, the client gone)
	IntakePending                       // 503: too many connections still sending their request
)

func (e *IntakeError) Error() string { return e.Msg }
func (e *IntakeError) Unwrap() error { return e.Err }

// readBody receives a POST's body. The checks that cost nothing come
// first (Content-Type, Content-Encoding, a Content-Length over the limit:
// answered at once, nothing read); then the body is read under the read
// deadline of server.read_body_timeout and decoded, the limit applying to
// the decoded bytes (a zip bomb is a 413, not a lot of memory).
//
// Every error is an *IntakeError, and the answer to it closes the
// connection ("Connection: close"): otherwise net/http would first read
// and discard what is left of the body — the wait a client that stops
// sending would hold the connection with.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := jsonMediaType(r.Header.Get("Content-Type")); err != nil {
		leaveBody(w)
		return nil, err
	}
	return g.readAnyBody(w, r)
}

// readAnyBody is readBody for a body of any media type (the passthrough's:
// an upload is multipart).
func (g *Gateway) readAnyBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit, timeout := g.cfg.Server.MaxBodyBytes, g.cfg.Server.ReadBodyTimeout
	body, err := g.receiveBody(w, r, limit, timeout)
	if err != nil {
		leaveBody(w)
	}
	return body, err
}

// checkKey checks the request's client key before a byte of its body is
// read: refused, the body is left unread and the connection closed after
// the answer; accepted (or no keys configured), the connection leaves the
// keyless share of the pending connections.
func (g *Gateway) checkKey(w http.ResponseWriter, r *http.Request) (*auth.Key, error) {
	key, err := g.keys.Check(r.Header)
	if err != nil {
		leaveBody(w)
		return nil, err
	}
	g.pending.keyed(r)
	return key, nil
}

func (g *Gateway) receiveBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) (_ []byte, err error) {
	decode, err := contentDecoder(r.Header.Get("Content-Encoding"))
	if err != nil {
		return nil, err
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout)) // unsupported by test recorders: no deadline then
	defer func() {
		if err == nil {
			rc.SetReadDeadline(time.Time{}) // the connection's next read (a stream's disconnect watch) has none
		}
	}()
	raw := io.LimitReader(r.Body, limit+1)
	var body []byte
	if decode == nil {
		body, err = readAll(raw, r.ContentLength)
	} else {
		body, err = decode(raw, limit)
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &IntakeError{Kind: IntakeTimeout, Err: err,
			Msg: fmt.Sprintf("The request body did not arrive within %s (server.read_body_timeout); send it whole and at once.", timeout)}
	case err != nil:
		if _, bad := err.(badEncoding); bad {
			return nil, &IntakeError{Kind: IntakeBadEncoding, Err: err,
				Msg: fmt.Sprintf("The request body could not be decoded as its Content-Encoding says (%s); send it as that encoding, or uncompressed.", wire.Clip(r.Header.Get("Content-Encoding")))}
		}
		return nil, &IntakeError{Kind: IntakeIncomplete, Err: err, Msg: "The request body broke off before its end; send it again."}
	case int64(len(body)) > limit:
		return nil, tooLarge(limit)
	}
	return body, nil
}

func tooLarge(limit int64) error {
	return &IntakeError{Kind: IntakeTooLarge,
		Msg: fmt.Sprintf("The request body is larger than this gateway's limit of %d bytes; send a shorter transcript.", limit)}
}

// readAll reads r whole, in one buffer of the Content-Length when there
// is one (io.ReadAll would grow and copy a large transcript several
// times).
func readAll(r io.Reader, length int64) ([]byte, error) {
	if length <= 0 {
		return io.ReadAll(r)
	}
	buf := make([]byte, length+1) // one more: a body longer than it says shows
	n, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// jsonMediaType accepts a JSON Content-Type (application/json, or any
// "+json" type), or none: a request without one is taken as JSON, as the
// OpenAI API takes it.
func jsonMediaType(v string) error {
	if v == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(v)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return &IntakeError{Kind: IntakeMediaType,
		Msg: fmt.Sprintf("The Content-Type %q is not JSON; send the body as JSON with Content-Type: application/json.", wire.Clip(v))}
}

// badEncoding marks a body its Content-Encoding does not decode.
type badEncoding struct{ error }

// decoder reads a whole encoded body, at most limit+1 decoded bytes.
type decoder func(r io.Reader, limit int64) ([]byte, error)

// contentDecoder returns the decoder for a Content-Encoding: nil for none
// (or identity); gzip, deflate (zlib, or raw deflate as some clients send
// it) and zstd; anything else is refused.
func contentDecoder(enc string) (decoder, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return nil, nil
	case "gzip", "x-gzip":
		return func(r io.Reader, limit int64) ([]byte, error) {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, badEncoding{err}
			}
			return readDecoded(zr, limit)
		}, nil
	case "deflate":
		return func(r io.Reader, limit int64) ([]byte, error) {
			raw, err := io.ReadAll(r) // the encoded bytes, at most limit+1
			if err != nil {
				return nil, err
			}
			zr, err := zlib.NewReader(bytes.NewReader(raw))
			if err != nil {
				return readDecoded(flate.NewReader(bytes.NewReader(raw)), limit)
			}
			return readDecoded(zr, limit)
		}, nil
	case "zstd":
		return func(r io.Reader, limit int64) ([]byte, error) {
			zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(limit+1, 64<<20))))
			if err != nil {
				return nil, badEncoding{err}
			}
			defer zr.Close()
			return readDecoded(zr, limit)
		}, nil
	}
	return nil, &IntakeError{Kind: IntakeEncoding,
		Msg: fmt.Sprintf("The Content-Encoding %q is not supported; send the body uncompressed, or as gzip, deflate or zstd.", wire.Clip(enc))}
}

// readDecoded reads at most limit+1 bytes of a decoder's output. A read
// error of the underlying connection (a deadline) stays what it is; any
// other is the encoding's.
func readDecoded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, badEncoding{err}
	}
	return b, err
}

package responses

import (
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// The body of a request of each costly shape is written into the buffer
// bodySize sizes, never a larger one (growing it would cost the body
// once more, and more).
func TestBodySized(t *testing.T) {
	for name, body := range wiretest.Shapes() {
		req, err := wire.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := UpstreamRequest(req, translate.Options{Model: "m", DefaultMaxTokens: 100})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if size := bodySize(req, req.Messages); cap(r.Body) != size || len(r.Body) < size*8/10 {
			t.Errorf("%s: %d bytes written in a buffer of %d, sized %d", name, len(r.Body), cap(r.Body), size)
		}
	}
}

package responses

import (
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/translate"
	"github.com/toolgate/toolgate/internal/wire"
)

// The body of a request of each costly shape is written into the buffer
// bodySize sizes (wiretest.BodySized).
func TestBodySized(t *testing.T) {
	wiretest.BodySized(t, func(req *wire.ChatRequest) ([]byte, error) {
		r, err := UpstreamRequest(req, translate.Options{Model: "m", DefaultMaxTokens: 100})
		return r.Body, err
	}, func(req *wire.ChatRequest) int { return bodySize(req, req.Messages) })
}

package responses

import (
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
	"github.com/toolgate/toolgate/internal/wire"
)

// The body of a request of each costly shape is written into the buffer
// bodySize sizes (wiretest.BodySized).
func TestBodySized(t *testing.T) {
	wiretest.BodySized(t, UpstreamRequest, func(req *wire.ChatRequest) int { return bodySize(req, req.Messages) })
}

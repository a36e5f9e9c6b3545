package bedrock

import (
	"testing"

	"github.com/toolgate/toolgate/internal/testing/wiretest"
)

// The body of a request of each costly shape is written into the buffer
// bodySize sizes (wiretest.BodySized).
func TestBodySized(t *testing.T) { wiretest.BodySized(t, Request, bodySize) }

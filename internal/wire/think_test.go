package wire

import (
	"strings"
	"testing"
)

// Inline <think> reasoning is separated from the answer whatever the chunk
// boundaries, and the answer never carries a tag (docs/quirks.md A30).
func TestThinkSplitter(t *testing.T) {
	full := "<think>plan: check the weather</think>It is sunny. a<b and </thin are text"
	for size := 1; size <= len(full); size++ {
		var ts ThinkSplitter
		var r, c strings.Builder
		for i := 0; i < len(full); i += size {
			rr, cc := ts.Split(full[i:min(i+size, len(full))])
			r.WriteString(rr)
			c.WriteString(cc)
		}
		rr, cc := ts.Flush()
		r.WriteString(rr)
		c.WriteString(cc)
		if r.String() != "plan: check the weather" || c.String() != "It is sunny. a<b and </thin are text" {
			t.Fatalf("chunks of %d: reasoning %q, text %q", size, r.String(), c.String())
		}
	}
}

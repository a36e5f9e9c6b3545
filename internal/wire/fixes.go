package wire

import (
	"iter"
	"slices"
	"strconv"
	"strings"
)

// Fix names one normalization of an upstream's response (docs/quirks.md section
// A). Its name is the "kind" label of toolgate_normalizations_total.
type Fix uint8

// The normalizations, in the order their names sort.
const (
	FixArgumentsObject     Fix = iota // arguments_object: arguments sent as a JSON value, made its text (A12)
	FixChoiceIndex                    // choice_index: a lone choice's index made 0 (A27)
	FixChunkID                        // chunk_id: a chunk's id made the first chunk's (A24)
	FixContentBlocks                  // content_blocks: content sent as typed blocks made text and reasoning (A31)
	FixDroppedBlock                   // dropped_block: a content block with no text or reasoning (a reference) dropped (A31)
	FixEmptyFinishReason              // empty_finish_reason: "" read as no finish reason (A18)
	FixFinishReason                   // finish_reason: "stop" (or none) after calls made "tool_calls" (A15)
	FixIndexReuse                     // index_reuse: a new id at a used index starts a new call (A02)
	FixKeepaliveData                  // keepalive_data: a keep-alive sent as data dropped (A34)
	FixMergedChoices                  // merged_choices: calls spread over choices folded into one (A28)
	FixMissingFinishReason            // missing_finish_reason: [DONE] without a finish reason given one (A17)
	FixMissingID                      // missing_id: a call without an id given one (A07)
	FixMissingIndex                   // missing_index: a fragment without an index placed (A01)
	FixMissingRole                    // missing_role: the first delta given role "assistant" (A26)
	FixNoDone                         // no_done: a finish reason then EOF taken as complete (A21)
	FixNullError                      // null_error: an "error": null member removed (A40)
	FixPlaceholderChunk               // placeholder_chunk: an empty first chunk dropped (A23)
	FixPostFinish                     // post_finish_chunk: a chunk for a finished choice folded into its finish (Azure's content filter, OpenRouter's usage)
	FixRepeatedName                   // repeated_name: a name repeated on a continuation dropped (A10)
	FixSecondFinishReason             // second_finish_reason: a second terminal finish dropped (A16)
	numFixes
)

var fixNames = [numFixes]string{
	"arguments_object", "choice_index", "chunk_id", "content_blocks", "dropped_block", "empty_finish_reason",
	"finish_reason", "index_reuse", "keepalive_data", "merged_choices", "missing_finish_reason", "missing_id",
	"missing_index", "missing_role", "no_done", "null_error", "placeholder_chunk", "post_finish_chunk",
	"repeated_name", "second_finish_reason",
}

// fixQuirks are the docs/quirks.md rows each normalization answers (""
// for one that answers no row of its own).
var fixQuirks = [numFixes]string{
	"A12", "A27", "A24", "A31", "A31", "A18",
	"A15", "A02", "A34", "A28", "A17", "A07",
	"A01", "A26", "A21", "A40", "A23", "",
	"A10", "A16",
}

func (f Fix) String() string { return fixNames[f] }

// QuirkOf is the docs/quirks.md row (A02) the normalization named name
// answers, or "" for a name that is no normalization's or answers no row.
func QuirkOf(name string) string {
	if f, ok := fixNamed(name); ok {
		return fixQuirks[f]
	}
	return ""
}

// fixNamed is the normalization named name.
func fixNamed(name string) (Fix, bool) {
	k := slices.Index(fixNames[:], name)
	return Fix(k), k >= 0
}

// Fixes counts the normalizations applied to one response. It is a value:
// copying it copies the counts.
type Fixes [numFixes]int

// FixChunks is, for each normalization a Normalizer applied, the upstream
// chunk (counted from 1) at which it was first applied; 0 for one it did
// not apply.
type FixChunks [numFixes]int

// Of is the chunk at which the normalization named name was first
// applied (0: not applied, or no normalization's name).
func (c *FixChunks) Of(name string) int {
	if f, ok := fixNamed(name); ok {
		return c[f]
	}
	return 0
}

// Any reports whether any normalization was applied.
func (f *Fixes) Any() bool { return *f != Fixes{} }

// All yields each normalization applied, by name, with its count, in name
// order.
func (f *Fixes) All() iter.Seq2[string, int] {
	return func(yield func(string, int) bool) {
		for k, n := range f {
			if n > 0 && !yield(fixNames[k], n) {
				return
			}
		}
	}
}

// Add adds o's counts to f.
func (f *Fixes) Add(o Fixes) {
	for k := range f {
		f[k] += o[k]
	}
}

// String is the access log's form: "finish_reason=1; index_reuse=1", ""
// when nothing was applied.
func (f *Fixes) String() string {
	var b strings.Builder
	for name, n := range f.All() {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

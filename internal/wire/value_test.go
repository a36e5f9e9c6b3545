package wire

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeStd is what the JSON Schema validator's own reader makes of b
// (encoding/json with UseNumber, one JSON text).
func decodeStd(b []byte) (any, bool) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	return v, err == nil
}

var valueSeeds = []string{
	`{"city":"Paris","unit":"c"}`, `{"a":1,"a":2}`, `[1,-2.5e3,true,false,null,"x"]`,
	`{"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}`, `{"bad":"\ud800"}`, "\"\xff\xfe\"",
	` {"nested":{"deep":[[[{}]]],"empty":[]}} `, `1e999`, `{"a":1}x`, `{"a":}`, `[1,]`, ``, `"x`,
	"\xef\xbb\xbf{}", `{"k\u0000":0}`, `{"":{"":""}}`,
}

// Value decodes what encoding/json decodes, to the same values, and
// refuses what it refuses.
func TestValue(t *testing.T) {
	for _, s := range valueSeeds {
		checkValue(t, []byte(s))
	}
}

func FuzzValue(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkValue)
}

func checkValue(t *testing.T, b []byte) {
	want, wantOK := decodeStd(b)
	got, ok := Value(bytes.Clone(b))
	if ok != wantOK || !reflect.DeepEqual(got, want) {
		t.Fatalf("Value(%q) = %#v, %v; encoding/json: %#v, %v", b, got, ok, want, wantOK)
	}
}

// BenchmarkValue: a call's arguments, decoded for the schema check.
func BenchmarkValue(b *testing.B) {
	args := []byte(`{"city":"Paris","unit":"c","notes":"Hello! How can I help you today? Hello! How can I help you today?"}`)
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Value(args)
		}
	})
	b.Run("jsonschema", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeStd(args)
		}
	})
}

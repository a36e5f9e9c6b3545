package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any file is either a config or an *Error listing its
// problems (a YAML syntax error aside), never a panic; each problem names
// a field path or a line.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"upstreams: [{name: a, url: \"http://x\"}]\nroutes: [{model: m, upstream: a}]\n",
		"listen: 8080\nupstreams:\n  - name: a\n    url: \"${U}\"\n    conect_timeout: 5s\n    header_timeout: soon\nroutes:\n  - {model: m, upstream: nope, retries: many}\n",
		"routes: [{model: m, passthrough: [{path: /v1/files, methodz: [GET]}], budget: {max_calls: lots}}]\n",
		"keys: {a: b}\nupstreams: 3\nroutes: [[1]]\npricing: {m: {input: x}}\n",
		"a: &x {b: 1}\nc: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, func(k string) string {
			if k == "SET" {
				return "v"
			}
			return ""
		})
		if err == nil && c == nil {
			t.Fatal("no config and no error")
		}
		var ce *Error
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				if p == "" || strings.HasPrefix(p, ": ") {
					t.Fatalf("a problem without its place: %q", p)
				}
			}
		}
	})
}

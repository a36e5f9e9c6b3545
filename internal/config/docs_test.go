package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// docPaths are the config's keys as docs/configuration.md names them: the
// dotted path from the top (lists as [], maps of blocks as .*), the blocks
// shared by keys and routes under their own name (budget.…).
func docPaths() (leaves, blocks []string) {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || key == "" || key == "-" {
				continue
			}
			path := prefix + key
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == reflect.TypeFor[Budget]():
				out = append(out, path) // a block of its own, documented once
				if !slices.Contains(out, "budget.preset") {
					walk(ft, "budget.")
				}
			case ft == reflect.TypeFor[Passthrough]():
				out = append(out, path)
				walk(reflect.TypeFor[PathRule](), path+"[].")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && ft.Elem() != reflect.TypeFor[PathRule]():
				blocks = append(blocks, path)
				walk(ft.Elem(), path+"[].")
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				blocks = append(blocks, path)
				walk(ft.Elem(), path+".*.")
			case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]() && !strings.HasPrefix(ft.Name(), "Enum["):
				blocks = append(blocks, path)
				walk(ft, path+".")
			default:
				out = append(out, path)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out, blocks
}

// docs/configuration.md documents every key of the config types, and
// every key it documents exists: a key added, renamed or removed without
// its documentation fails here.
func TestConfigurationDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	known, blocks := docPaths()
	documented := map[string]bool{}
	row := regexp.MustCompile(`(?m)^\| ([^|]+) \|`)
	code := regexp.MustCompile("`([a-z_0-9.\\[\\]*]+)`")
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		for _, c := range code.FindAllStringSubmatch(m[1], -1) {
			documented[c[1]] = true
		}
	}
	for _, p := range known {
		if !documented[p] {
			t.Errorf("%s is not documented in docs/configuration.md (a table row naming it)", p)
		}
	}
	for p := range documented {
		if strings.Contains(p, ".") || strings.Contains(p, "[]") {
			if !slices.Contains(known, p) && !slices.Contains(blocks, p) {
				t.Errorf("docs/configuration.md documents %s, which is no key of the config", p)
			}
		}
	}
}

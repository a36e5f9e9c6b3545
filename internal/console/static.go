package console

import (
	"bytes"
	"embed"
	"html"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/docs"
)

// static is the page and its assets: no CDN, no build step.
//
//go:embed static
var static embed.FS

// page serves one embedded file.
func page(name string) http.HandlerFunc {
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		panic("console: " + err.Error()) // embedded: a missing file is a build mistake
	}
	typ := mime.TypeByExtension(path.Ext(name))
	if typ == "" {
		typ = "text/html; charset=utf-8"
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", typ)
		_, _ = w.Write(b)
	}
}

// quirkRow is a row of docs/quirks.md's tables: its anchor, its id and
// its cells.
var quirkRow = regexp.MustCompile(`^\| <a id="([a-z0-9]+)"></a>([A-Z][0-9]+) \| (.*)\|\s*$`)

// markdownLink is a link, whose text the page keeps.
var markdownLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// quirksHTML is docs/quirks.md's rows as a page, each row at its anchor
// (/ui/quirks#a02), made once.
var quirksHTML = func() []byte {
	var b bytes.Buffer
	b.WriteString(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>toolgate · wire quirks</title>` +
		`<link rel="icon" href="favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="console.css"></head><body class="quirks"><h1>Wire quirks</h1>` +
		`<p>The rows of docs/quirks.md: what each quirk is, and what toolgate does about it.</p><table>`)
	for line := range strings.Lines(string(docs.Quirks)) {
		m := quirkRow.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		b.WriteString(`<tr id="` + m[1] + `"><th>` + m[2] + `</th>`)
		for _, cell := range strings.Split(m[3], " | ") {
			cell = markdownLink.ReplaceAllString(cell, "$1")
			cell = strings.NewReplacer("**", "", "`", "", "*", "").Replace(strings.TrimSpace(cell))
			b.WriteString("<td>" + html.EscapeString(cell) + "</td>")
		}
		b.WriteString("</tr>")
	}
	b.WriteString(`</table></body></html>`)
	return b.Bytes()
}()

func quirksPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(quirksHTML)
}

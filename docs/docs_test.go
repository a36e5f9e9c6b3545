package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package.
const root = ".."

// sources are the files whose references are checked: the documents
// and the Go code (the Node client's dependencies aside).
func sources(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".go" || ext == ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found %d files under %s: not the repository", len(files), root)
	}
	return files
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	heading  = regexp.MustCompile(`(?m)^#{1,6} +(.+)$`)
	idAnchor = regexp.MustCompile(`<a id="([^"]+)"></a>`)
)

// slug is the anchor a heading gets on GitHub (and in most renderers):
// lower case, letters, digits, spaces, hyphens and underscores kept, the
// spaces made hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the link targets a Markdown document defines: its headings'
// slugs (a repeated one numbered as GitHub numbers it) and its <a id>s.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		s := slug(strings.ReplaceAll(m[1], "`", ""))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range idAnchor.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link in a Markdown file names a file that exists and, with
// a #fragment, an anchor that file defines.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	n := 0
	for _, file := range sources(t) {
		if filepath.Ext(file) != ".md" {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(read(t, file), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if frag == "" {
				continue
			}
			if cache[dest] == nil {
				cache[dest] = anchors(read(t, dest))
			}
			if !cache[dest][frag] {
				t.Errorf("%s: link %s: %s has no anchor %q", file, target, dest, frag)
			}
		}
	}
	if n < 30 {
		t.Fatalf("checked %d relative links: the documents link far more", n)
	}
}

var (
	section     = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	specHeading = regexp.MustCompile(`(?m)^#{2,3} §(\d+(?:\.\d+)?) `)
	quirkID     = regexp.MustCompile(`\b([ACD])(\d\d)(?:–[ACD]?(\d\d))?\b`)
)

// Every section cited as §N or §N.M, in the code or the documents, is a
// heading of docs/spec.md.
func TestSpecSections(t *testing.T) {
	have := map[string]bool{}
	for _, m := range specHeading.FindAllStringSubmatch(read(t, "spec.md"), -1) {
		have[m[1]] = true
	}
	if !have["1.4"] || !have["7"] {
		t.Fatalf("spec.md sections %v: §1.4 and §7 missing", have)
	}
	n := 0
	for _, file := range sources(t) {
		for i, line := range strings.Split(read(t, file), "\n") {
			for _, m := range section.FindAllStringSubmatch(line, -1) {
				n++
				if !have[m[1]] {
					t.Errorf("%s:%d: §%s is no section of docs/spec.md", file, i+1, m[1])
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("checked %d section citations: the code cites far more", n)
	}
}

// Every quirk id cited (A07, C04, D03), in the code or the documents, has
// its row in docs/quirks.md; and the code or the tests cite every quirk of
// section A, the ones the normalizer answers.
func TestQuirkIDs(t *testing.T) {
	have := anchors(read(t, "quirks.md"))
	cited := map[string]bool{}
	for _, file := range sources(t) {
		for i, line := range strings.Split(read(t, file), "\n") {
			for _, m := range quirkID.FindAllStringSubmatch(line, -1) {
				for _, id := range quirkRange(m[1], m[2], m[3]) {
					if !have[strings.ToLower(id)] {
						t.Errorf("%s:%d: quirk %s has no row in docs/quirks.md", file, i+1, id)
					}
					if filepath.Ext(file) == ".go" {
						cited[id] = true
					}
				}
			}
		}
	}
	for id := range have {
		if len(id) == 3 && id[0] == 'a' && !cited[strings.ToUpper(id)] {
			t.Errorf("quirk %s: no code or test cites it", strings.ToUpper(id))
		}
	}
}

// quirkRange expands a cited id or range ("A34–A37") into its ids.
func quirkRange(section, from, to string) []string {
	if to == "" {
		to = from
	}
	a, _ := strconv.Atoi(from)
	b, _ := strconv.Atoi(to)
	var ids []string
	for n := a; n <= b; n++ {
		ids = append(ids, fmt.Sprintf("%s%02d", section, n))
	}
	return ids
}

var citedDoc = regexp.MustCompile(`\bdocs/([a-z]+\.md)\b`)

// Every document the code names (docs/spec.md, docs/quirks.md, …) exists.
func TestCitedDocuments(t *testing.T) {
	n := 0
	for _, file := range sources(t) {
		for _, m := range citedDoc.FindAllStringSubmatch(read(t, file), -1) {
			n++
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("%s names docs/%s: %v", file, m[1], err)
			}
		}
	}
	if n < 50 {
		t.Fatalf("checked %d citations of documents: the code has far more", n)
	}
}

// No function of the product's packages and commands (tests, the
// simulator and the test-only packages aside) runs past 80 lines or takes more than five
// parameters, as docs/design.md says: a function that needs more is two
// stages, or its inputs are one value.
func TestFunctionShape(t *testing.T) {
	n := 0
	eachProductFile(t, []string{"internal", "cmd"}, func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(node ast.Node) bool {
			var typ *ast.FuncType
			var body *ast.BlockStmt
			switch fn := node.(type) {
			case *ast.FuncDecl:
				typ, body = fn.Type, fn.Body
			case *ast.FuncLit:
				typ, body = fn.Type, fn.Body
			default:
				return true
			}
			n++
			params := 0
			for _, p := range typ.Params.List {
				params += max(1, len(p.Names))
			}
			at := fset.Position(node.Pos())
			if body != nil {
				if lines := fset.Position(body.End()).Line - at.Line + 1; lines > 80 {
					t.Errorf("%s: a function of %d lines (at most 80)", at, lines)
				}
			}
			if params > 5 {
				t.Errorf("%s: a function of %d parameters (at most 5)", at, params)
			}
			return true
		})
	})
	if n < 500 {
		t.Fatalf("checked %d functions: the product has far more", n)
	}
}

// Each package's doc comment is where a reader looks first: in doc.go, or
// in the file named after the package (main.go for a command), and in no
// other file.
func TestPackageDocFirst(t *testing.T) {
	n := 0
	for _, dir := range []string{"internal", "cmd", "bench", "configs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || d.Name() == "testdata" || d.Name() == "node_modules" {
				return err
			}
			files, _ := filepath.Glob(filepath.Join(path, "*.go"))
			docsOf := map[string][]string{} // package name → the files with its doc comment
			for _, file := range files {
				if strings.HasSuffix(file, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly|parser.ParseComments)
				if err != nil {
					return err
				}
				if _, seen := docsOf[f.Name.Name]; !seen {
					docsOf[f.Name.Name] = nil // a package without a doc comment is checked too
				}
				if f.Doc != nil {
					docsOf[f.Name.Name] = append(docsOf[f.Name.Name], filepath.Base(file))
				}
			}
			for name, docs := range docsOf {
				n++
				want := map[string]bool{"doc.go": true, name + ".go": true, filepath.Base(path) + ".go": true, "main.go": name == "main"}
				if len(docs) != 1 || !want[docs[0]] {
					t.Errorf("%s: package %s's doc comment is in %v: want it in doc.go or %s.go, and only there", path, name, docs, name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 20 {
		t.Fatalf("checked %d packages: the project has more", n)
	}
}

// eachProductFile parses each Go file of the product below dirs (tests,
// the simulator, the test-only packages and test data aside) and calls fn
// with it.
func eachProductFile(t *testing.T, dirs []string, fn func(*token.FileSet, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "sim" || d.Name() == "testing" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			fn(fset, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

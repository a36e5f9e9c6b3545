package docs

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every error code the gateway can answer with has a row in spec §7's
// table, and every code the table names is one the code emits. The codes
// are read from the product's code: the second argument of each
// wire.NewError call, a string literal or a variable whose string
// literals are found in the assignments to it in the same function.
func TestErrorCodesDocumented(t *testing.T) {
	emitted := emittedCodes(t)
	if len(emitted) < 20 {
		t.Fatalf("found %d error codes in the code: it has more", len(emitted))
	}
	documented := specCodes(t)
	for code, at := range emitted {
		if !documented[code] {
			t.Errorf("%s: error code %q has no row in docs/spec.md §7", at, code)
		}
	}
	for code := range documented {
		if _, ok := emitted[code]; !ok {
			t.Errorf("docs/spec.md §7 names error code %q, which no code emits", code)
		}
	}
}

// specCodes returns the codes in the last column of §7's table.
func specCodes(t *testing.T) map[string]bool {
	b, err := os.ReadFile(filepath.Join(root, "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## §7 ")
	end := strings.Index(s[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("docs/spec.md has no §7")
	}
	codes := map[string]bool{}
	word := regexp.MustCompile("`([a-z_]+)`")
	for line := range strings.Lines(s[start : start+1+end]) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "|") || strings.TrimSpace(cells[1]) == "status" {
			continue
		}
		for _, m := range word.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			codes[m[1]] = true
		}
	}
	return codes
}

// emittedCodes returns each error code of the product's code with where
// it is emitted.
func emittedCodes(t *testing.T) map[string]string {
	codes := map[string]string{}
	eachProductFile(t, []string{"internal"}, func(fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				for code, pos := range funcCodes(fn) {
					codes[code] = fset.Position(pos).String()
				}
			}
		}
	})
	return codes
}

// funcCodes returns the codes fn passes to NewError.
func funcCodes(fn *ast.FuncDecl) map[string]token.Pos {
	codes := map[string]token.Pos{}
	var vars []string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "NewError" {
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "NewError" {
				return true
			}
		}
		switch arg := call.Args[1].(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(arg.Value); err == nil && s != "" {
				codes[s] = arg.Pos()
			}
		case *ast.Ident:
			vars = append(vars, arg.Name)
		}
		return true
	})
	// A variable's codes: the string literals of what is assigned to it.
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for i, lhs := range as.Lhs {
			id, ok := lhs.(*ast.Ident)
			if !ok || !slices.Contains(vars, id.Name) || len(as.Rhs) != len(as.Lhs) && len(as.Rhs) != 1 {
				continue
			}
			rhs := as.Rhs[min(i, len(as.Rhs)-1)]
			ast.Inspect(rhs, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
						codes[s] = lit.Pos()
					}
				}
				return true
			})
		}
		return true
	})
	return codes
}

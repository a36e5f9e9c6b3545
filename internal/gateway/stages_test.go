package gateway

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stageOrder is docs/design.md's walk of a request, file by file: the
// router and the handlers, then each stage. dataFiles hold what several
// stages share with its data (the Gateway, the exchange, the client APIs,
// plans): any stage may call them.
var (
	stageOrder = []string{"models.go", "passthrough.go", "responses.go", "messages.go", "intake.go", "match.go", "edge.go",
		"deploy.go", "prepare.go", "admit.go", "attempt.go", "stream.go", "whole.go", "judge.go", "errors.go", "trace.go"}
	dataFiles = []string{"gateway.go", "chat.go", "api.go", "plan.go", "doc.go", "pending.go", "admin.go"}
)

// A stage file calls only the stages after it (docs/design.md, "One
// request, as data"): no package function or Gateway method of an earlier
// stage's file is called from a later one — what both need lives with its
// data. Methods of other types (a plan's matcher, a route's reach) are
// their values' own. Every file of the package is placed.
func TestStagesCallForward(t *testing.T) {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	funcs := map[string]string{}   // package function → its file
	methods := map[string]string{} // Gateway method → its file
	parsed := map[string]*ast.File{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if !slices.Contains(stageOrder, name) && !slices.Contains(dataFiles, name) {
			t.Errorf("%s is in neither the stage order nor the data files: place it", name)
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			switch {
			case !ok:
			case fn.Recv == nil:
				funcs[fn.Name.Name] = name
			case receiverIs(fn, "Gateway"):
				methods[fn.Name.Name] = name
			}
		}
	}
	calls := 0
	for from, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			to := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				to = funcs[fn.Name]
			case *ast.SelectorExpr:
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "g" {
					to = methods[fn.Sel.Name]
				}
			}
			if to == "" || to == from {
				return true
			}
			calls++
			if slices.Contains(dataFiles, to) || slices.Contains(dataFiles, from) {
				return true
			}
			if slices.Index(stageOrder, to) < slices.Index(stageOrder, from) {
				t.Errorf("%s: %s calls back into %s, an earlier stage", fset.Position(call.Pos()), from, to)
			}
			return true
		})
	}
	if calls < 50 {
		t.Fatalf("checked %d calls between files: the package has more", calls)
	}
}

func receiverIs(fn *ast.FuncDecl, name string) bool {
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.Name == name
}

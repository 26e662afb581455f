package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is the import path prefix of cairn's own packages.
const module = "github.com/cairnmq/cairn/"

// TestAPINamesNoProtocolType parses the package and fails if an exported
// declaration (a function's parameters or results, an exported field, a
// variable) mentions a type from another cairn package: the codec, the
// handshake and the client core are free to change, so a program using
// the client must never need to import them.
func TestAPINamesNoProtocolType(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := cairnImports(f)
		report := func(where string, e ast.Node) {
			for _, sel := range cairnSelectors(e, internal) {
				t.Errorf("%s: %s exposes %s", fset.Position(sel.Pos()), where, internal[sel.X.(*ast.Ident).Name]+"."+sel.Sel.Name)
			}
		}
		for _, d := range f.Decls {
			checked++
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedReceiver(d.Recv)) {
					report(d.Name.Name, d.Type)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							report(s.Name.Name, exportedPart(s.Type))
						}
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							if s.Type != nil {
								report(n.Name, s.Type)
							}
							if i < len(s.Values) {
								report(n.Name, s.Values[i])
							}
						}
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d declarations: the test is not reading the package", checked)
	}
}

// TestExamplesImportOnlyTheClient checks that the examples, which show
// what a user's program looks like, import the client and the standard
// library alone.
func TestExamplesImportOnlyTheClient(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "example_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path == module+"client" {
			found = true
		} else if strings.Contains(path, ".") {
			t.Errorf("the examples import %s; a program using the client needs only the client", path)
		}
	}
	if !found {
		t.Fatal("the examples do not import the client")
	}
}

// cairnImports maps the local names of f's imports of other cairn
// packages to their paths.
func cairnImports(f *ast.File) map[string]string {
	out := make(map[string]string)
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(path, module) {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

// cairnSelectors returns every qualified identifier in n that names
// something from one of the packages in internal. Struct types inside n
// count only their exported fields.
func cairnSelectors(n ast.Node, internal map[string]string) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	if n == nil {
		return nil
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.StructType:
			out = append(out, cairnSelectors(exportedPart(n), internal)...)
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && internal[x.Name] != "" {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}

// exportedPart returns a struct type's exported fields as a field list (an
// embedded field counts when its type is exported), and any other type
// expression unchanged.
func exportedPart(e ast.Expr) ast.Node {
	st, ok := e.(*ast.StructType)
	if !ok {
		return e
	}
	kept := &ast.FieldList{}
	for _, f := range st.Fields.List {
		exported := len(f.Names) == 0 && embeddedExported(f.Type)
		for _, n := range f.Names {
			exported = exported || n.IsExported()
		}
		if exported {
			kept.List = append(kept.List, f)
		}
	}
	return kept
}

// embeddedExported reports whether an embedded field's type name is
// exported.
func embeddedExported(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StarExpr:
		return embeddedExported(e.X)
	case *ast.Ident:
		return e.IsExported()
	case *ast.SelectorExpr:
		return e.Sel.IsExported()
	}
	return false
}

// exportedReceiver reports whether a method's receiver type is exported.
func exportedReceiver(recv *ast.FieldList) bool {
	return len(recv.List) == 1 && embeddedExported(recv.List[0].Type)
}

// TestPoliciesRoundTrip checks that every policy the client names
// converts to the protocol and back by name, so the two lists cannot
// drift apart.
func TestPoliciesRoundTrip(t *testing.T) {
	for _, p := range []Policy{PolicyMajority, PolicyAll, PolicyOwnerOnly} {
		if _, ok := p.toWire(); !ok {
			t.Errorf("%d has no protocol value", p)
		}
		if got, err := ParsePolicy(p.String()); err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := ParsePolicy("most"); err == nil {
		t.Error("ParsePolicy accepted an unknown name")
	}
}

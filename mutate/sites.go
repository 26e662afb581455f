// Package mutate measures the simulator's power on bugs nobody planted: it
// makes small, realistic changes (mutants) to node and storage code, one
// at a time, and asks whether a sweep or the tests notice. A mutant the
// sweep runs past without a violation is either a gap in the fault model
// or the checkers, or equivalent to the original; the report lists each
// survivor so a person can tell which.
package mutate

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
)

// Operator names a kind of change.
type Operator string

// The operators: what a slip of the hand does to a comparison, a bound,
// a condition or a durable step.
const (
	// Boundary moves a comparison's edge: < and <=, > and >= trade places.
	Boundary Operator = "boundary"
	// Negate turns == into != and back.
	Negate Operator = "negate"
	// Logic turns && into || and back.
	Logic Operator = "logic"
	// OffByOne drops the one from x+1 and x-1.
	OffByOne Operator = "off-by-one"
	// DropCall removes a statement that calls a sync, a persist or write
	// step, a fence or a halt: the step a protocol relies on, skipped.
	DropCall Operator = "drop-call"
)

// Site is one mutant: a change of the bytes [Offset, Offset+len(Old)) of
// File from Old to New.
type Site struct {
	File   string // as given to Find, slash-separated
	Line   int
	Offset int
	Op     Operator
	Old    string
	New    string
}

// String names the mutant as a report lists it.
func (s Site) String() string {
	old, repl := oneLine(s.Old), oneLine(s.New)
	if repl == "" {
		repl = "(removed)"
	}
	return fmt.Sprintf("%s:%d %s: %s -> %s", s.File, s.Line, s.Op, old, repl)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// Apply returns src with the mutant's change made. It panics if src does
// not hold Old at Offset: the site was found in other source.
func (s Site) Apply(src []byte) []byte {
	end := s.Offset + len(s.Old)
	if end > len(src) || string(src[s.Offset:end]) != s.Old {
		panic(fmt.Sprintf("mutate: %s does not hold %q at byte %d", s.File, s.Old, s.Offset))
	}
	out := make([]byte, 0, len(src)-len(s.Old)+len(s.New))
	out = append(out, src[:s.Offset]...)
	out = append(out, s.New...)
	return append(out, src[end:]...)
}

// swaps are the operator changes of Boundary, Negate and Logic.
var swaps = map[token.Token]struct {
	op   Operator
	with string
}{
	token.LSS:  {Boundary, "<="},
	token.LEQ:  {Boundary, "<"},
	token.GTR:  {Boundary, ">="},
	token.GEQ:  {Boundary, ">"},
	token.EQL:  {Negate, "!="},
	token.NEQ:  {Negate, "=="},
	token.LAND: {Logic, "||"},
	token.LOR:  {Logic, "&&"},
}

// droppable says whether a call to a function of this name is a step
// whose loss DropCall models.
func droppable(name string) bool {
	for _, p := range []string{"Sync", "RequestSync", "SyncFront", "persist", "Persist", "write", "Write", "fence", "Halt"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// Find lists the mutants of one Go source file, in the order they appear.
// name is how sites name the file. Comparisons against nil and mutants
// inside panic calls are left out: the first rarely survive the compiler
// or a nil dereference, and the second only change a message.
func Find(name string, src []byte) ([]Site, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var sites []Site
	planted := plantedSpans(f)
	add := func(pos token.Pos, op Operator, old, repl string) {
		if slices.ContainsFunc(planted, func(s span) bool { return s.from <= pos && pos < s.to }) {
			return
		}
		p := fset.Position(pos)
		sites = append(sites, Site{File: name, Line: p.Line, Offset: p.Offset, Op: op, Old: old, New: repl})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return false
			}
		case *ast.BinaryExpr:
			if sw, ok := swaps[n.Op]; ok && !isNil(n.X) && !isNil(n.Y) {
				add(n.OpPos, sw.op, n.Op.String(), sw.with)
			}
			if lit, ok := n.Y.(*ast.BasicLit); ok && lit.Kind == token.INT && lit.Value == "1" && (n.Op == token.ADD || n.Op == token.SUB) {
				add(lit.Pos(), OffByOne, "1", "0")
			}
		case *ast.ExprStmt:
			if call, ok := n.X.(*ast.CallExpr); ok && droppable(calleeName(call)) {
				start, end := fset.Position(n.Pos()).Offset, fset.Position(n.End()).Offset
				add(n.Pos(), DropCall, string(src[start:end]), "")
			}
		}
		return true
	})
	slices.SortStableFunc(sites, func(a, b Site) int { return cmp.Compare(a.Offset, b.Offset) })
	return sites, nil
}

// span is a range of source positions, [from, to).
type span struct{ from, to token.Pos }

// plantedSpans lists the code that runs only with a planted bug switched
// on: the body of an if (or of a switch's case) whose condition requires
// bugs.Active, the terms such a condition joins to bugs.Active with &&,
// and the rest of a function whose first statement after its opening
// assignments returns unless bugs.Active holds. Mutants there change nothing in the build the
// sweep judges, so they would only count as survivors nobody can kill.
// The operators that join a condition's terms stay: a mutated one can
// take the planted branch without the bug.
func plantedSpans(f *ast.File) []span {
	var out []span
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt:
			if requiresBug(n.Cond) {
				out = append(out, span{n.Body.Pos(), n.Body.End()})
				out = append(out, termsBesideBug(n.Cond)...)
			}
		case *ast.CaseClause:
			// A case of a tagless switch is an if in all but name.
			if len(n.List) == 1 && requiresBug(n.List[0]) {
				out = append(out, span{n.Colon, n.End()})
				out = append(out, termsBesideBug(n.List[0])...)
			}
		case *ast.FuncDecl:
			if n.Body == nil {
				return true
			}
			// The guard may follow the assignments it reads.
			for _, st := range n.Body.List {
				if guard, ok := st.(*ast.IfStmt); ok && guard.Else == nil && returnsUnlessBug(guard) {
					out = append(out, span{guard.End(), n.Body.End()})
				}
				if _, ok := st.(*ast.AssignStmt); !ok {
					break
				}
			}
		}
		return true
	})
	return out
}

// requiresBug reports whether cond can hold only while a planted bug is
// on: a bugs.Active call, or a conjunction with one among its terms.
func requiresBug(cond ast.Expr) bool {
	switch c := ast.Unparen(cond).(type) {
	case *ast.CallExpr:
		return isBugsActive(c)
	case *ast.BinaryExpr:
		return c.Op == token.LAND && (requiresBug(c.X) || requiresBug(c.Y))
	}
	return false
}

// termsBesideBug lists the terms of cond, a condition that requires a
// planted bug, that && joins to the bug's requirement: whatever a mutant
// makes of such a term (a comparison's edge, a negation), the condition
// still holds only with the bug on. The && between them is not listed.
func termsBesideBug(cond ast.Expr) []span {
	c, ok := ast.Unparen(cond).(*ast.BinaryExpr)
	if !ok || c.Op != token.LAND {
		return nil
	}
	switch {
	case requiresBug(c.X):
		return append(termsBesideBug(c.X), span{c.Y.Pos(), c.Y.End()})
	case requiresBug(c.Y):
		return append(termsBesideBug(c.Y), span{c.X.Pos(), c.X.End()})
	}
	return nil
}

// returnsUnlessBug reports whether s is `if !bugs.Active(..) || ... {
// return ... }`: whatever follows it runs only with the bug on.
func returnsUnlessBug(s *ast.IfStmt) bool {
	if len(s.Body.List) != 1 {
		return false
	}
	if _, ok := s.Body.List[0].(*ast.ReturnStmt); !ok {
		return false
	}
	var notBug func(ast.Expr) bool
	notBug = func(e ast.Expr) bool {
		switch c := ast.Unparen(e).(type) {
		case *ast.UnaryExpr:
			call, ok := ast.Unparen(c.X).(*ast.CallExpr)
			return c.Op == token.NOT && ok && isBugsActive(call)
		case *ast.BinaryExpr:
			return c.Op == token.LOR && (notBug(c.X) || notBug(c.Y))
		}
		return false
	}
	return notBug(s.Cond)
}

func isBugsActive(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Active" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "bugs"
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

func calleeName(call *ast.CallExpr) string {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}

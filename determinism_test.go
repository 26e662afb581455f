package cairn_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deterministicPatterns are the packages that must be a pure function of
// (scenario, seed). Every package under them is linted, with no
// exemptions: the production environment lives apart, in live/, and the
// connection handshake, which needs crypto randomness, in session/.
var deterministicPatterns = []string{
	"./node/...", "./wire/...", "./latency/...", "./storage/...", "./netsim/...", "./sim/...", "./props/...", "./trials/...", "./shrink/...", "./client/core/...", "./bugs/...", "./fifoheap/...",
	"./event/...",
}

// forbiddenImports may not appear in a deterministic package at all.
var forbiddenImports = map[string]string{
	"os":           "the operating system (use the Env's FS)",
	"os/exec":      "the operating system",
	"os/signal":    "the operating system",
	"syscall":      "the operating system",
	"net":          "the real network (use Env.Send)",
	"net/http":     "the real network",
	"crypto/rand":  "unseeded randomness",
	"math/rand":    "the v1 global generator (use the Env's *rand.Rand)",
	"sync":         "goroutine coordination (handlers run one at a time)",
	"sync/atomic":  "goroutine coordination",
	"hash/maphash": "a per-process random seed",
	"runtime":      "scheduler and process state",
	"unsafe":       "memory layout tricks",
}

// forbiddenObjects may not be referenced, called or not.
var forbiddenObjects = map[string]string{
	"time.Now": "the wall clock", "time.Since": "the wall clock", "time.Until": "the wall clock",
	"time.Sleep": "blocking", "time.After": "real timers", "time.AfterFunc": "real timers",
	"time.NewTimer": "real timers", "time.NewTicker": "real timers", "time.Tick": "real timers",
	"github.com/cockroachdb/pebble/v2/vfs.Default": "the real disk (use the Env's FS)",
}

// allowedRand are the math/rand/v2 functions that build seeded generators;
// every other package-level function draws from the global source.
var allowedRand = []string{"New", "NewPCG", "NewChaCha8", "NewZipf"}

type listedPackage struct {
	ImportPath     string
	Dir            string
	Export         string
	GoFiles        []string
	IgnoredGoFiles []string
	DepOnly        bool
}

func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
}

// exportLookup maps import paths to compiled export data, so go/types
// can check a package against its real dependencies.
func exportLookup(pkgs []listedPackage) func(string) (io.ReadCloser, error) {
	exports := make(map[string]string)
	for _, p := range pkgs {
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
}

// lintFiles checks the given files of one package and returns one line
// per violation.
func lintFiles(t *testing.T, importPath string, files []string, lookup func(string) (io.ReadCloser, error)) []string {
	t.Helper()
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	info := &types.Info{Uses: make(map[*ast.Ident]types.Object), Types: make(map[ast.Expr]types.TypeAndValue)}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	// A type error would leave gaps in info and let violations through
	// unseen, so the package must check cleanly.
	if _, err := conf.Check(importPath, fset, parsed, info); err != nil {
		t.Fatalf("type-checking %s for the lint: %v", importPath, err)
	}
	var found []string
	report := func(pos token.Pos, format string, args ...any) {
		p := fset.Position(pos)
		found = append(found, fmt.Sprintf("%s:%d: %s", filepath.Base(p.Filename), p.Line, fmt.Sprintf(format, args...)))
	}
	for _, af := range parsed {
		for _, imp := range af.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if why, bad := forbiddenImports[path]; bad {
				report(imp.Pos(), "imports %s: %s", path, why)
			}
		}
		lintSyntax(af, info, report)
	}
	return found
}

func lintSyntax(af *ast.File, info *types.Info, report func(token.Pos, string, ...any)) {
	sortedArgs := make(map[ast.Expr]bool)
	ast.Inspect(af, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "go statement: handlers run on the simulator's one goroutine")
		case *ast.SelectStmt:
			report(n.Pos(), "select statement: no channels in deterministic code")
		case *ast.SendStmt:
			report(n.Pos(), "channel send: no channels in deterministic code")
		case *ast.ChanType:
			report(n.Pos(), "channel type: no channels in deterministic code")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n.Pos(), "channel receive: no channels in deterministic code")
			}
		case *ast.RangeStmt:
			if tv, ok := info.Types[n.X]; ok {
				if _, isMap := tv.Type.Underlying().(*types.Map); isMap {
					report(n.Pos(), "range over a map: iteration order is random; range over sorted keys")
				}
			}
		case *ast.CallExpr:
			if name := qualifiedName(info, n.Fun); name == "slices.Sorted" || name == "slices.SortedFunc" {
				for _, a := range n.Args {
					sortedArgs[a] = true
				}
			}
			switch name := qualifiedName(info, n.Fun); name {
			case "maps.Keys", "maps.Values", "maps.All":
				if !sortedArgs[n] {
					report(n.Pos(), "%s yields in random order; wrap it in slices.Sorted", name)
				}
			}
		case *ast.Ident:
			obj := info.Uses[n]
			if obj == nil || obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
				return true
			}
			full := obj.Pkg().Path() + "." + obj.Name()
			if why, bad := forbiddenObjects[full]; bad {
				report(n.Pos(), "uses %s: %s", full, why)
			}
			if _, isFunc := obj.(*types.Func); isFunc && obj.Pkg().Path() == "math/rand/v2" && !slices.Contains(allowedRand, obj.Name()) {
				report(n.Pos(), "math/rand/v2.%s draws from the global generator; use the Env's *rand.Rand", obj.Name())
			}
		}
		return true
	})
}

// qualifiedName renders pkg.Name for a package-level function reference.
func qualifiedName(info *types.Info, fun ast.Expr) string {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	obj := info.Uses[sel.Sel]
	if obj == nil || obj.Pkg() == nil {
		return ""
	}
	return obj.Pkg().Path() + "." + obj.Name()
}

// TestDeterministicPackagesFollowTheContract lints every non-test file of
// the deterministic packages, once as normally built and once with the
// planted-bug build tag, so defects planted for the simulator to find
// obey the contract too.
func TestDeterministicPackagesFollowTheContract(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the tree with go list; skipped in -short")
	}
	reported := make(map[string]bool)
	for _, tags := range []string{"", "cairn_bugs"} {
		targets := goList(t, append([]string{"-tags", tags}, deterministicPatterns...)...)
		lookup := exportLookup(goList(t, append([]string{"-export", "-deps", "-tags", tags}, deterministicPatterns...)...))
		checked := 0
		for _, p := range targets {
			if p.Dir == "" {
				continue
			}
			var files []string
			for _, f := range p.GoFiles {
				files = append(files, filepath.Join(p.Dir, f))
			}
			for _, v := range lintFiles(t, p.ImportPath, files, lookup) {
				if line := p.ImportPath + ": " + v; !reported[line] {
					reported[line] = true
					t.Error(line)
				}
			}
			checked++
		}
		if checked < 5 {
			t.Fatalf("linted only %d packages with tags %q; the package patterns are wrong", checked, tags)
		}
	}
}

// TestLintCatchesEveryRule runs the lint over a file that breaks every
// rule once and checks that each rule fires.
func TestLintCatchesEveryRule(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks with go list; skipped in -short")
	}
	deps := goList(t, "-export", "-deps", "crypto/rand", "maps", "math/rand/v2", "os", "slices", "sync", "time",
		"github.com/cockroachdb/pebble/v2/vfs")
	found := lintFiles(t, "bad", []string{"testdata/lint/bad/bad.go"}, exportLookup(deps))
	text := strings.Join(found, "\n")
	for _, want := range []string{
		"imports crypto/rand", "imports os", "imports sync", "go statement", "select statement",
		"channel send", "channel receive", "channel type", "uses time.Now", "uses time.Sleep",
		"uses time.After", "math/rand/v2.IntN", "range over a map", "maps.Keys yields",
		"uses github.com/cockroachdb/pebble/v2/vfs.Default",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lint missed %q; it reported:\n%s", want, text)
		}
	}
	src, err := os.ReadFile("testdata/lint/bad/bad.go")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(src), "\n") {
		if !strings.Contains(line, "// allowed") {
			continue
		}
		prefix := fmt.Sprintf("bad.go:%d:", i+1)
		for _, f := range found {
			if strings.HasPrefix(f, prefix) {
				t.Errorf("lint flagged an allowed construct: %s", f)
			}
		}
	}
	if n := strings.Count(text, "maps.Keys yields"); n != 1 {
		t.Errorf("maps.Keys reported %d times, want once (the sorted use is allowed)", n)
	}
}

package cairn_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/event"
)

// eventLike is the shape of an event name: a family the node emits and a
// kind. A literal of this shape outside package event is an event name
// spelt by hand, registered or not, and would silently stop matching when
// the event is renamed.
var eventLike = regexp.MustCompile(`^(queue|recovery|meta|detect|node|counter)\.[a-z-]+$`)

// TestNoEventNameLiterals parses every Go file of the module outside
// package event and fails on any string literal that is a registered
// event name or looks like one: every emitter and reader must use the
// constants, so a renamed event is a compile error, not a blind checker.
func TestNoEventNameLiterals(t *testing.T) {
	registered := make(map[string]bool)
	for _, n := range event.Names() {
		registered[string(n)] = true
	}
	files := moduleGoFiles(t)
	if len(files) < 100 {
		t.Fatalf("found only %d Go files; the walk is wrong", len(files))
	}
	for _, path := range files {
		for _, hit := range eventLiterals(t, path, nil, registered) {
			t.Error(hit)
		}
	}
}

// TestEventLiteralLintCatchesALiteral runs the check over a file that
// spells one registered name and one unregistered name of the same shape.
func TestEventLiteralLintCatchesALiteral(t *testing.T) {
	registered := map[string]bool{string(event.QueueOpen): true}
	// The look-alike is built, so that this file does not spell it.
	lookalike := "meta" + ".not-an-event"
	src := "package p\n\nvar a = " + strconv.Quote(string(event.QueueOpen)) + "\n\nvar b = " + strconv.Quote(lookalike) + "\n"
	hits := eventLiterals(t, "p.go", src, registered)
	if len(hits) != 2 || !strings.Contains(hits[0], "registered") || !strings.Contains(hits[1], "looks like") {
		t.Fatalf("the lint reported %q; want the registered name and the look-alike", hits)
	}
}

// moduleGoFiles lists the module's Go files, tests included and build tags
// ignored, leaving out package event, testdata (fixtures no build sees)
// and hidden directories.
func moduleGoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "event" && filepath.Dir(path) == "." || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// eventLiterals parses one file (src, or the file at path when src is nil)
// and describes every string literal that is a registered event name or
// looks like one.
func eventLiterals(t *testing.T, path string, src any, registered map[string]bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		switch pos := fset.Position(lit.Pos()); {
		case registered[s]:
			hits = append(hits, pos.String()+": "+strconv.Quote(s)+" is a registered event name; use package event's constant")
		case eventLike.MatchString(s):
			hits = append(hits, pos.String()+": "+strconv.Quote(s)+" looks like an event name; add it to package event and use the constant")
		}
		return true
	})
	return hits
}

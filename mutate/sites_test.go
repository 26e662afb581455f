package mutate

import (
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

const sample = `package p

func f(a, b int, ok bool, l *log) int {
	if a < b && ok {
		l.RequestSync()
	}
	if a == nil || b >= a+1 {
		panic(a != b)
	}
	l.persistEpoch(a)
	l.emit(b)
	return a - 1
}
`

// TestFindListsEachKindOfSite holds Find to the sites a reader of sample
// would list, and to none of the ones it must leave out (a comparison
// with nil, anything inside a panic, a call no operator drops).
func TestFindListsEachKindOfSite(t *testing.T) {
	sites, err := Find("p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sites {
		got = append(got, s.String())
	}
	want := []string{
		"p.go:4 boundary: < -> <=",
		"p.go:4 logic: && -> ||",
		"p.go:5 drop-call: l.RequestSync() -> (removed)",
		"p.go:7 logic: || -> &&",
		"p.go:7 boundary: >= -> >",
		"p.go:7 off-by-one: 1 -> 0",
		"p.go:10 drop-call: l.persistEpoch(a) -> (removed)",
		"p.go:12 off-by-one: 1 -> 0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sites:\n%q\nwant:\n%q", got, want)
	}
}

// TestApplyMakesOneChange applies every site of sample and requires a
// file that still parses and differs from the original only at the site.
func TestApplyMakesOneChange(t *testing.T) {
	sites, err := Find("p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sites {
		out := s.Apply([]byte(sample))
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", out, 0); err != nil {
			t.Errorf("%s: the mutant does not parse: %v", s, err)
		}
		if string(out[:s.Offset]) != sample[:s.Offset] || string(out[s.Offset+len(s.New):]) != sample[s.Offset+len(s.Old):] {
			t.Errorf("%s: the mutant changed more than its site", s)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Apply on source without the site's text did not panic")
		}
	}()
	sites[0].Apply([]byte("package p\n"))
}

// TestChooseIsSeeded draws the same sample for the same seed, another for
// another seed, in file order, and everything when asked for more.
func TestChooseIsSeeded(t *testing.T) {
	var sites []Site
	for i := range 100 {
		sites = append(sites, Site{Offset: i})
	}
	a, b, c := Choose(sites, 10, 1), Choose(sites, 10, 1), Choose(sites, 10, 2)
	if !slices.Equal(a, b) || slices.Equal(a, c) || len(a) != 10 {
		t.Fatalf("seed 1 drew %v and %v; seed 2 drew %v", a, b, c)
	}
	if !slices.IsSortedFunc(a, func(x, y Site) int { return x.Offset - y.Offset }) {
		t.Fatalf("the sample is not in file order: %v", a)
	}
	if len(Choose(sites, 0, 1)) != 100 || len(Choose(sites, 500, 1)) != 100 {
		t.Fatalf("asking for all or more did not give all")
	}
}

const plantedSample = `package p

func g(a, b int, l *log) int {
	if bugs.Active(bugs.X) && a > 0 {
		return a + 1
	}
	if a < b || bugs.Active(bugs.Y) {
		l.RequestSync()
	}
	return b - 1
}

func h(a, b int) int {
	c := a
	if !bugs.Active(bugs.Z) || c == b {
		return 0
	}
	return a + 1
}

func k(a, b int) int {
	switch {
	case bugs.Active(bugs.W) && a > b:
		return a - 1
	case a == b:
		return 0
	}
	return b
}
`

// TestFindLeavesPlantedCodeAlone: the body of an if that needs a planted
// bug, the terms its condition joins to the bug with && (line 4's a > 0),
// and the rest of a function that returns unless one is on, run only in
// a build the sweep does not judge, or change nothing there; their
// mutants are left out, in an if and in a switch's case alike. The &&
// joining a condition's terms keeps its mutant, and so does a branch a
// bug only widens.
func TestFindLeavesPlantedCodeAlone(t *testing.T) {
	sites, err := Find("p.go", []byte(plantedSample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sites {
		got = append(got, s.String())
	}
	want := []string{
		"p.go:4 logic: && -> ||",
		"p.go:7 boundary: < -> <=",
		"p.go:7 logic: || -> &&",
		"p.go:8 drop-call: l.RequestSync() -> (removed)",
		"p.go:10 off-by-one: 1 -> 0",
		"p.go:15 logic: || -> &&",
		"p.go:15 negate: == -> !=",
		"p.go:23 logic: && -> ||",
		"p.go:25 negate: == -> !=",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sites:\n%q\nwant:\n%q", got, want)
	}
}

//go:build cairn_bugs

package seeds_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// bugHuntSeeds bounds the search for a catching scenario under -update.
const bugHuntSeeds = 1000

// TestBugCorpusCatches switches on each planted bug and requires its
// scenario in bugs/ to fail. With -update it hunts for the first seed
// that catches the bug and writes that seed's scenario instead.
func TestBugCorpusCatches(t *testing.T) {
	for _, name := range bugs.All {
		t.Run(name, func(t *testing.T) {
			if err := bugs.Enable(name); err != nil {
				t.Fatal(err)
			}
			defer bugs.Enable("")
			path := filepath.Join("bugs", name+".scenario")
			if *update && !handWritten(t, path) {
				writeCatchingScenario(t, name, path)
				return
			}
			files := loadCorpus(t, "bugs")
			for _, f := range files {
				if f.path != path {
					continue
				}
				if rep := props.RunQueue(f.sc, nil); !rep.Failed() {
					t.Fatalf("%s no longer catches %s; run go test -tags cairn_bugs ./seeds -run BugCorpus -update", path, name)
				}
				return
			}
			t.Fatalf("no %s; run go test -tags cairn_bugs ./seeds -run BugCorpus -update", path)
		})
	}
}

// handWritten reports whether the corpus file at path was written by
// hand: a bug the swarm does not reach keeps the scenario that shows it,
// and -update checks it like any other instead of hunting.
func handWritten(t *testing.T, path string) bool {
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	return strings.Contains(first, ": hand-written")
}

func writeCatchingScenario(t *testing.T, name, path string) {
	for seed := uint64(1); seed <= bugHuntSeeds; seed++ {
		sc := sim.QueueScenario(seed)
		rep := props.RunQueue(sc, nil)
		if !rep.Failed() {
			continue
		}
		if err := bugs.Enable(""); err != nil {
			t.Fatal(err)
		}
		standing := props.RunQueue(sc, nil).Failed()
		if err := bugs.Enable(name); err != nil {
			t.Fatal(err)
		}
		if standing {
			// It fails with no bug planted: it catches nothing, and the
			// plain corpus test would fail on it.
			t.Logf("seed %d fails without %s too (a standing failure): skipped", seed, name)
			continue
		}
		text, err := sc.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		head := fmt.Sprintf("# planted bug %s: first caught by seed %d (%s)\n", name, seed, rep.Violations[0].Checker)
		if err := os.WriteFile(path, append([]byte(head), text...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no seed in 1-%d catches %s", bugHuntSeeds, name)
}

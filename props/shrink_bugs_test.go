//go:build cairn_bugs

package props

import (
	"flag"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/cairnmq/cairn/bugs"
)

// shrinkBug is the planted bug the shrinking tests use: it needs a
// failover to show, so a minimal counterexample keeps at least one fault
// and shrinking has real work to do.
const shrinkBug = bugs.SkipSeal

// recordingTB runs a rapid check without failing the real test, so a
// test can require that the check fails and inspect what it shrank to.
type recordingTB struct {
	*testing.T
	failed bool
	msgs   []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Error(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...); r.FailNow() }
func (r *recordingTB) Fatal(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)); r.FailNow() }
func (r *recordingTB) Fail()                             { r.failed = true }
func (r *recordingTB) FailNow()                          { r.failed = true; panic(stopRecording{}) }
func (r *recordingTB) Failed() bool                      { return r.failed }

type stopRecording struct{}

// With a planted bug on, the rapid property fails, and rapid's shrinking
// brings the counterexample down to at most five faults.
func TestRapidShrinksPlantedBug(t *testing.T) {
	if err := bugs.Enable(shrinkBug); err != nil {
		t.Fatal(err)
	}
	defer bugs.Enable("")
	// This check is meant to fail; its fail file would only be replayed
	// into the next ordinary run of the property.
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("rapid.nofailfile", "false")
	var lastFaults = -1
	rec := &recordingTB{T: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopRecording); !ok {
					panic(r)
				}
			}
		}()
		rapid.Check(rec, func(rt *rapid.T) {
			sc := drawScenario(rt)
			if rep := RunQueue(sc, nil); rep.Failed() {
				lastFaults = len(sc.Faults)
				rt.Fatalf("%s", rep.Violations[0])
			}
		})
	}()
	if !rec.failed {
		t.Fatalf("the property held with %s switched on", shrinkBug)
	}
	t.Logf("rapid's minimal counterexample has %d faults", lastFaults)
	if lastFaults < 0 || lastFaults > 5 {
		t.Fatalf("rapid's minimal counterexample has %d faults, want at most 5", lastFaults)
	}
}

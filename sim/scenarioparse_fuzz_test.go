package sim_test

import (
	"testing"

	"github.com/cairnmq/cairn/sim"
	"github.com/google/go-cmp/cmp"
)

// FuzzParseScenario feeds arbitrary text to the scenario parser, which
// reads hand-edited files. It must never panic, and a text it accepts
// means one scenario: printing that scenario and parsing the print gives
// the same scenario back, field for field, and printing it again gives
// the same text. A scenario the parser accepts but cannot print, or
// prints as something else, would replay differently once saved.
func FuzzParseScenario(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 7, 42} {
		text, err := sim.QueueScenario(seed).MarshalText()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		sc, err := sim.ParseScenario(text)
		if err != nil {
			return
		}
		printed, err := sc.MarshalText()
		if err != nil {
			t.Fatalf("an accepted scenario does not print: %v\ninput:\n%s", err, text)
		}
		back, err := sim.ParseScenario(printed)
		if err != nil {
			t.Fatalf("the print of an accepted scenario does not parse: %v\ninput:\n%s\nprinted:\n%s", err, text, printed)
		}
		if d := cmp.Diff(sc, back); d != "" {
			t.Fatalf("printing and parsing changed the scenario (-parsed +reparsed):\n%s\ninput:\n%s\nprinted:\n%s", d, text, printed)
		}
		if again, _ := back.MarshalText(); string(again) != string(printed) {
			t.Fatalf("the scenario prints differently the second time:\n%s\n---\n%s", printed, again)
		}
	})
}

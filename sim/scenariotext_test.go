package sim_test

import (
	"strings"
	"testing"

	"github.com/cairnmq/cairn/sim"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// Every generated scenario survives being written out and read back,
// field for field, and writing the parsed copy gives the same text.
func TestScenarioTextRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		sc := sim.QueueScenario(seed)
		text, err := sc.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		back, err := sim.ParseScenario(text)
		if err != nil {
			t.Fatalf("parsing what MarshalText wrote: %v\n%s", err, text)
		}
		if d := cmp.Diff(sc, back); d != "" {
			t.Fatalf("round trip changed the scenario (-want +got):\n%s\n%s", d, text)
		}
		again, _ := back.MarshalText()
		if string(again) != string(text) {
			t.Fatalf("text changed on the second round:\n%s\n---\n%s", text, again)
		}
	})
}

// A hand-edited file with a mistake is refused with the line and the
// reason, never run with a silently different meaning.
func TestScenarioTextErrorsNameTheLine(t *testing.T) {
	base, _ := sim.QueueScenario(3).MarshalText()
	for _, c := range []struct{ edit, want string }{
		{"fault at=1s crash n9 for=1s", "names a node outside n1.."},
		{"fault at=1s explode n1", "unknown fault kind"},
		{"fault at=1s crash n1 for=1s colour=red", `unknown option "colour"`},
		{"fault at=soon crash n1", "at=DURATION"},
		{"net latency=1ms..2ms", ""}, // a later line changes only what it names
		{"net latency=1ms", "MIN..MAX"},
		{"nodes three", "line"},
		{"queue q9 quorum", "unknown confirmation policy"},
		{"teleport n1", "unknown directive"},
	} {
		text := string(base) + c.edit + "\n"
		_, err := sim.ParseScenario([]byte(text))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: unexpected error %v", c.edit, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one mentioning %q", c.edit, err, c.want)
		}
	}
}

package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/sim"
)

// The checkpoint-progress checker: an owner of the final epoch that
// confirmed records well before the end must have had a cut certified
// within the cadence's reach of them; records confirmed late, an earlier
// epoch's commits, and runs without checkpoints or a calm phase are not
// judged.
func TestCheckpointProgressChecker(t *testing.T) {
	sc := sim.QueueScenario(3)
	sc.Checkpoint = sim.CheckpointCadence{Records: 10}
	lim := limitsFor(sc)
	end := 16 * time.Second
	early := end - ckptProgressBound(lim) - time.Second
	run := func(certified uint64, commits ...commitSeen) *ckptProgress {
		p := &ckptProgress{}
		for _, c := range commits {
			p.observe(c.at, c.node, event.NewQueueCommit("q0", c.index, c.epoch))
		}
		if certified > 0 {
			p.observe(early, 1, event.NewCheckpointCertified("q0", 7, certified, 2, []uint32{1, 2, 3}))
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		certified uint64
		commits   []commitSeen
		live      bool
		want      string
	}{
		{"within the cadence", 95, []commitSeen{{early, 1, 2, 100}}, true, ""},
		{"past the cadence", 80, []commitSeen{{early, 1, 2, 100}}, true, "more than 11 records behind"},
		{"never certified", 0, []commitSeen{{early, 1, 2, 100}}, true, "cut at the end (16s) is 0"},
		{"confirmed too late to judge", 0, []commitSeen{{end - time.Second, 1, 2, 100}}, true, ""},
		{"an older epoch's owner", 0, []commitSeen{{early, 1, 1, 100}, {end - time.Second, 2, 2, 3}}, true, ""},
		{"no calm phase", 0, []commitSeen{{early, 1, 2, 100}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, run(tc.certified, tc.commits...).check(sc, lim, tc.live, end), tc.want)
		})
	}
	sc.Checkpoint = sim.CheckpointCadence{}
	wantViolation(t, run(0, commitSeen{early, 1, 2, 100}).check(sc, lim, true, end), "")
}

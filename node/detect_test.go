package node

import "testing"

// Eager detection verifies a peer once a ping has gone unanswered for an
// interval on a quiet link, for half as long again as the longest wait
// it saw lately on a link that stalls, and never for more than three
// intervals, which is what DetectionPolicy.Silence counts.
func TestEagerIdleLimitLearnsStallsUpToThreeIntervals(t *testing.T) {
	d := &detector{}
	const interval = 10 // ticks
	for _, c := range []struct{ waitMax, want uint64 }{
		{0, interval},      // a quiet link: one interval
		{6, interval},      // answers within the interval change nothing
		{12, 19},           // a 120 ms wait: half as long again, and a tick
		{19, 29},           // just under the cap
		{40, 3 * interval}, // a wait past the cap (a restart, a long stall)
	} {
		if got := d.idleLimit(&watch{waitMax: c.waitMax}, interval); got != c.want {
			t.Errorf("waitMax %d ticks: idle limit %d ticks, want %d", c.waitMax, got, c.want)
		}
	}
}

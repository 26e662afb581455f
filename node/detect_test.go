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

// TestALeaderHearsAPeerWhoseOldestPingWaitsAVerificationAndATick pins
// hearsOthers' bound: a peer whose oldest unanswered ping went out a
// verification and one tick ago still counts as answering, one a tick
// older does not, and a peer that answered everything always does.
func TestALeaderHearsAPeerWhoseOldestPingWaitsAVerificationAndATick(t *testing.T) {
	const now = 100
	suspect := &watch{id: 2, awaited: now - 20}
	for _, tc := range []struct {
		awaited uint64
		want    bool
	}{
		{0, true},
		{now - (verifyTicks + 1), true},
		{now - (verifyTicks + 2), false},
	} {
		other := &watch{id: 3, awaited: tc.awaited}
		d := &detector{ticks: now, watches: []*watch{suspect, other}}
		if got := d.hearsOthers(suspect); got != tc.want {
			t.Errorf("another peer's oldest unanswered ping from tick %d (now %d): hearsOthers = %v, want %v", tc.awaited, now, got, tc.want)
		}
	}
	if d := (&detector{ticks: now, watches: []*watch{suspect}}); !d.hearsOthers(suspect) {
		t.Error("with no other peer to hear, hearsOthers = false, want true")
	}
}

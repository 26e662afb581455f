package node

import "testing"

// A node short of space has a queue checkpointed out of turn only when
// the checkpoint would hold at most half of what the replica keeps for
// the queue, and a log segment less at least: enough to matter, and
// never at each record of a queue that holds next to nothing.
func TestACheckpointReclaimsSpaceWhenItHalvesWhatTheQueueKeepsBySegmentsOrMore(t *testing.T) {
	const segment = 4096
	for _, c := range []struct {
		name        string
		state, kept int64
		want        bool
	}{
		{"a purge emptied a queue whose checkpoint holds 199 KB", 0, 202_082, true},
		{"drained to half", 50_000, 100_000, true},
		{"drained to a little more than half", 50_001, 100_000, false},
		{"nothing drained", 100_000, 100_000, false},
		{"an empty queue keeping less than a segment", 0, segment - 1, false},
		{"an empty queue keeping a segment", 0, segment, true},
		{"half of what it keeps, but less than a segment back", 3000, 6000, false},
	} {
		if got := reclaims(c.state, c.kept, segment); got != c.want {
			t.Errorf("%s: state %d of %d kept: reclaims %t, want %t", c.name, c.state, c.kept, got, c.want)
		}
	}
}

package node

import (
	"strings"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// oldCheckpointHead writes a checkpoint file's content as version v of
// the format did: version 1 had no making time and no journal, version 2
// added the time, version 3 the journal.
func oldCheckpointHead(v uint8, c replicaCheckpoint) []byte {
	b := wire.AppendUint8(nil, v)
	b = wire.AppendUint64(b, c.cut)
	b = wire.AppendUint64(b, c.cutEpoch)
	b = wire.AppendBytes(b, c.digest[:])
	b = wire.AppendBool(b, c.installed)
	if v >= 2 {
		b = wire.AppendInt64(b, c.madeAt)
	}
	if v >= 3 {
		b = wire.AppendBool(b, c.journaled)
		b = wire.AppendUint64(b, c.journalFrom)
	}
	return wire.AppendBytes(b, c.state)
}

// TestCheckpointsOfEveryVersionDecode reads a checkpoint written by each
// version of the format this code accepts, as a node upgraded over an
// older node's disk does: every field the version had comes back, the
// ones it lacked are zero. Version 0 and versions from the future are
// refused by name.
func TestCheckpointsOfEveryVersionDecode(t *testing.T) {
	c := replicaCheckpoint{cut: 41, cutEpoch: 3, installed: true, state: []byte("state"), madeAt: 1234, journaled: true, journalFrom: 17}
	c.digest[0], c.digest[31] = 7, 9
	if cur := append(encodeCheckpointHead(c), c.state...); string(cur) != string(oldCheckpointHead(checkpointVersion, c)) {
		t.Fatalf("version %d as written today differs from the layout this test knows", checkpointVersion)
	}
	for v := uint8(1); v <= checkpointVersion; v++ {
		got, err := decodeCheckpoint(oldCheckpointHead(v, c))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		want := c
		if v < 2 {
			want.madeAt = 0
		}
		if v < 3 {
			want.journaled, want.journalFrom = false, 0
		}
		if got.cut != want.cut || got.cutEpoch != want.cutEpoch || got.digest != want.digest || got.installed != want.installed ||
			string(got.state) != string(want.state) || got.madeAt != want.madeAt || got.journaled != want.journaled || got.journalFrom != want.journalFrom {
			t.Errorf("version %d decoded as %+v, want %+v", v, got, want)
		}
	}
	for _, v := range []uint8{0, checkpointVersion + 1, 255} {
		bad := append([]byte{v}, oldCheckpointHead(checkpointVersion, c)[1:]...)
		if _, err := decodeCheckpoint(bad); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %d: got %v, want a refusal naming the version", v, err)
		}
	}
}

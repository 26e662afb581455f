package node

import (
	"strings"
	"testing"
)

// TestMetaSnapshotVersionBounds decodes a snapshot under every version
// byte around the ones this code reads: an empty state encodes at the
// current version and decodes, and the same bytes under version 0 or a
// version from the future are refused by name, never read as something
// they are not.
func TestMetaSnapshotVersionBounds(t *testing.T) {
	s := &metaState{queues: make(map[string]*QueueMeta), down: make(map[NodeID]bool)}
	data := s.encode()
	if data[0] != metaSnapshotVersion {
		t.Fatalf("a snapshot starts with version %d, want %d", data[0], metaSnapshotVersion)
	}
	if _, err := decodeMetaState(data); err != nil {
		t.Fatalf("the current version does not decode: %v", err)
	}
	for _, v := range []byte{0, metaSnapshotVersion + 1, 255} {
		bad := append([]byte{v}, data[1:]...)
		if _, err := decodeMetaState(bad); err == nil || !strings.Contains(err.Error(), "version") {
			t.Errorf("version %d: got %v, want a refusal naming the version", v, err)
		}
	}
}

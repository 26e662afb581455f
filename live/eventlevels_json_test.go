package live

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
)

// Through a JSON handler, each change an operator follows (an election,
// a suspicion and its confirmation, a replacement, a queue's creation
// and deletion, a certified checkpoint, the disk filling and emptying)
// is one object at info or, for a full disk, warn, whose keys are
// exactly the event's attribute keys: the same for every event of a
// name, whatever the values.
func TestChangesAreOneJSONLineWithTheEventsKeys(t *testing.T) {
	var buf bytes.Buffer
	l := newEventLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	now := time.Unix(1000, 0)
	changes := []struct {
		ev    event.Event
		level string
	}{
		{event.NewMetaLeader(4, 2), "INFO"},
		{event.NewDetectSuspect(3, 900*time.Millisecond), "INFO"},
		{event.NewDetectConfirm(3), "INFO"},
		{event.NewMetaReplicaReplaced("orders", 3, []uint32{1, 2, 4}), "INFO"},
		{event.NewMetaActivated("orders", 1), "INFO"},
		{event.NewQueueRetired("orders", 1), "INFO"},
		{event.NewCheckpointCertified("orders", 1, 5000, 3, []uint32{1, 2, 4}), "INFO"},
		{event.NewNodeDiskFull(4096, -1, "past the quota"), "WARN"},
		{event.NewNodeDiskOK(1024, 9000), "INFO"},
	}
	for _, c := range changes {
		l.emit(now, c.ev)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(changes) {
		t.Fatalf("%d lines for %d changes:\n%s", len(lines), len(changes), buf.String())
	}
	for i, c := range changes {
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, lines[i])
		}
		want := []string{"time", "level", "msg"}
		for _, a := range c.ev.Attrs {
			want = append(want, a.Key)
		}
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) || got["msg"] != string(c.ev.Name) || got["level"] != c.level {
			t.Errorf("line %d is %s: want %s at %s with keys %v", i, lines[i], c.ev.Name, c.level, want)
		}
	}
}

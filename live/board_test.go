package live

import (
	"encoding/json"
	"testing"

	"github.com/cairnmq/cairn/node"
	"github.com/google/go-cmp/cmp"
)

// A follower of an active queue says, in its /status JSON, that the
// queue is active and that this node does not serve it, under names that
// cannot be read as one claim about one thing.
func TestQueueStatusJSONKeepsQueueAndNodeApart(t *testing.T) {
	for _, c := range []struct {
		role string
		want map[string]any
	}{
		{"follower", map[string]any{"queue_state": "active", "role": "follower", "serving": false}},
		{"owner", map[string]any{"queue_state": "active", "role": "owner", "serving": true}},
	} {
		v := node.QueueView{Name: "orders", State: "active", Role: c.role, Owner: 1, Epoch: 2, Replicas: []node.NodeID{1, 2, 3}}
		b, err := json.Marshal(queueStatus(v))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		picked := map[string]any{}
		for k := range c.want {
			picked[k] = got[k]
		}
		if d := cmp.Diff(c.want, picked); d != "" {
			t.Errorf("%s: status JSON %s (-want +got):\n%s", c.role, b, d)
		}
		for _, ambiguous := range []string{"state", "active"} {
			if _, ok := got[ambiguous]; ok {
				t.Errorf("%s: status JSON has the ambiguous key %q: %s", c.role, ambiguous, b)
			}
		}
	}
}

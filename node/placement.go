package node

import (
	"fmt"
	"hash/fnv"

	"github.com/cairnmq/cairn/wire"
)

// Placement decides which nodes hold a queue and which of them owns it.
// Until the metadata store takes over placement, it is a pure function of
// the queue name and the cluster's node list, so every node agrees on it
// without talking.
type Placement struct {
	Nodes    []NodeID
	Replicas int
}

// ReplicaSet returns the queue's replicas, owner first.
func (p Placement) ReplicaSet(queue string) []NodeID {
	h := fnv.New32a()
	h.Write([]byte(queue))
	start := int(h.Sum32() % uint32(len(p.Nodes)))
	n := min(p.Replicas, len(p.Nodes))
	out := make([]NodeID, n)
	for i := range out {
		out[i] = p.Nodes[(start+i)%len(p.Nodes)]
	}
	return out
}

// Owner returns the queue's owner.
func (p Placement) Owner(queue string) NodeID { return p.ReplicaSet(queue)[0] }

// ValidQueueName checks a queue name: 1 to wire.MaxQueueNameLen bytes of
// letters, digits, '.', '-' and '_', not starting with '.'. Names become
// directory names, so nothing else is allowed.
func ValidQueueName(name string) error {
	if name == "" || len(name) > wire.MaxQueueNameLen {
		return fmt.Errorf("queue name is %d bytes long; a name is 1 to %d bytes of ASCII letters, digits, '.', '-' and '_', not starting with '.'",
			len(name), wire.MaxQueueNameLen)
	}
	if name[0] == '.' {
		return fmt.Errorf("queue name %q starts with '.'; a name may not (it becomes a directory name)", name)
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return fmt.Errorf("queue name %q has %q at byte %d; a name may hold only ASCII letters, digits, '.', '-' and '_'", name, name[i:i+1], i)
		}
	}
	return nil
}

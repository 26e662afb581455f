package node

import (
	"strings"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

// TestValidQueueNameEdges holds the queue-name rule to its edges: each
// end of every accepted character range, the characters just outside
// them, and the length bounds.
func TestValidQueueNameEdges(t *testing.T) {
	accepted := []string{"a", "z", "A", "Z", "0", "9", "a.b", "-", "_", "q" + strings.Repeat("x", wire.MaxQueueNameLen-1)}
	for _, name := range accepted {
		if err := ValidQueueName(name); err != nil {
			t.Errorf("ValidQueueName(%q) = %v, want nil", name, err)
		}
	}
	refused := []string{"", ".hidden", "a/b", "a b", "`", "{", "@", "[", "/", ":", "é", strings.Repeat("x", wire.MaxQueueNameLen+1)}
	for _, name := range refused {
		if err := ValidQueueName(name); err == nil {
			t.Errorf("ValidQueueName(%q) = nil, want an error", name)
		}
	}
}

package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
)

// nullEnv is just enough of an environment for role transitions to
// report themselves.
type nullEnv struct{ Env }

func (nullEnv) Emit(event.Event) {}

func (nullEnv) Monotonic() time.Duration { return time.Second }

func roleReplica(role replicaRole) *replica {
	return &replica{n: &Node{env: nullEnv{}}, name: "q", role: role, follow: &followerState{}}
}

// Every transition the state machine does not list panics, in every
// build; every listed one is taken.
func TestRoleTransitions(t *testing.T) {
	for from := rolePreparing; from <= roleRetired; from++ {
		for to := rolePreparing; to <= roleRetired; to++ {
			allowed := false
			for _, ok := range roleTransitions[from] {
				allowed = allowed || ok == to
			}
			r := roleReplica(from)
			err := func() (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("%v", v)
					}
				}()
				r.become(to, "test")
				return nil
			}()
			switch {
			case allowed && (err != nil || r.role != to):
				t.Errorf("%s → %s is listed but failed: %v", from, to, err)
			case !allowed && (err == nil || !strings.Contains(err.Error(), "no transition from "+from.String()+" to "+to.String())):
				t.Errorf("%s → %s is not listed but did not panic naming it: %v", from, to, err)
			}
		}
	}
}

// The roles that end a replica's part are terminal, and nothing brings a
// fenced replica back to serving.
func TestFencedAndRetiredAreTerminal(t *testing.T) {
	for _, to := range roleTransitions[roleFenced] {
		if to != roleRetired {
			t.Errorf("a fenced replica may become %s", to)
		}
	}
	if len(roleTransitions[roleRetired]) != 0 {
		t.Errorf("a retired replica may become %v", roleTransitions[roleRetired])
	}
	if r := roleReplica(roleFenced); r.becomeCandidate("test") || r.role != roleFenced {
		t.Error("a fenced replica became a candidate")
	}
}

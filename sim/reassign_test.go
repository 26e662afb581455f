package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// TestProvocationJudgesTheOldOwner checks the verdict on hand-built
// cases: a plan against a running owner that nothing touched is
// unprovoked; one against an owner down, paused, just restarted, or
// touched by a fault that ended within the window is not.
func TestProvocationJudgesTheOldOwner(t *testing.T) {
	up := ownerView{state: stateUp}
	pause := faultTouch{node: 0, from: 2 * time.Second, until: 2500 * time.Millisecond, what: "pause"}
	elsewhere := faultTouch{node: 1, from: 2 * time.Second, until: 2500 * time.Millisecond, what: "pause"}
	cases := []struct {
		name    string
		at      time.Duration
		view    ownerView
		touches []faultTouch
		want    string // "" for unprovoked, else a prefix of the cause
	}{
		{"no fault at all", time.Second, up, nil, ""},
		{"a fault on another node only", 3 * time.Second, up, []faultTouch{elsewhere}, ""},
		{"right after a pause of the owner", 2700 * time.Millisecond, up, []faultTouch{pause}, "pause 700ms before"},
		{"during a fault of the owner", 2200 * time.Millisecond, up, []faultTouch{pause}, "pause"},
		{"the window after the pause has passed", 4600 * time.Millisecond, up, []faultTouch{pause}, ""},
		{"a touch applied after the plan", time.Second, up, []faultTouch{pause}, ""},
		{"owner down", time.Second, ownerView{state: stateDown}, nil, "owner down"},
		{"owner paused", time.Second, ownerView{state: statePaused}, nil, "owner paused"},
		{"owner restarted just before", 3 * time.Second, ownerView{state: stateUp, restarted: true, bootAt: 2 * time.Second}, nil,
			"owner restarted 1s before"},
		{"owner restarted long before", 5 * time.Second, ownerView{state: stateUp, restarted: true, bootAt: 2 * time.Second}, nil, ""},
		{"first boot is no restart", time.Second, ownerView{state: stateUp, bootAt: 0}, nil, ""},
	}
	for _, c := range cases {
		got := provocation(c.at, 0, c.view, c.touches)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: provocation = %q, want %q", c.name, got, c.want)
		}
	}
}

// plannedMove is one plan the fake leader emits: at a virtual time, from
// one owner to a candidate, for an epoch. With detect set it emits
// instead that it applied that detection mode.
type plannedMove struct {
	at       time.Duration
	from, to uint32
	epoch    uint64
	detect   uint8
}

// planSystem is a System whose node n3 does nothing but emit the planned
// recoveries it is given, on time: a hand-built history of plans that
// the world judges against the faults it applies.
type planSystem struct{ moves []plannedMove }

// planNode is the handler planSystem gives every node.
type planNode struct {
	id    node.NodeID
	env   node.Env
	moves []plannedMove
}

// NewNode implements System.
func (s *planSystem) NewNode(id node.NodeID, _ []node.NodeID, env node.Env, _ bool) node.Handler {
	return &planNode{id: id, env: env, moves: s.moves}
}

// Observe implements System.
func (s *planSystem) Observe(time.Duration, node.NodeID, event.Event) {}

// LivenessStart implements System.
func (s *planSystem) LivenessStart(*World) {}

// Check implements System.
func (s *planSystem) Check(*World) []Violation { return nil }

// Summary implements System.
func (s *planSystem) Summary() string { return "" }

// Start sets a timer for each move on n3, which is never faulted, so
// its timers fire on time.
func (n *planNode) Start() {
	if n.id != 3 {
		return
	}
	for i, m := range n.moves {
		n.env.After(m.at-n.env.Monotonic(), node.Timer{Seq: uint64(i)})
	}
}

// OnTimer emits the move the timer is for.
func (n *planNode) OnTimer(t node.Timer) {
	m := n.moves[t.Seq]
	if m.detect != 0 {
		n.env.Emit(event.NewMetaDetection(int(m.detect), 100*time.Millisecond, 300*time.Millisecond))
		return
	}
	n.env.Emit(event.NewMetaPlanRecovery("q", m.from, m.to, m.epoch))
}

// OnMessage implements node.Handler.
func (n *planNode) OnMessage(node.NodeID, wire.Message) {}

// OnSynced implements node.Handler.
func (n *planNode) OnSynced(node.SyncToken, error) {}

// OnDisconnect implements node.Handler.
func (n *planNode) OnDisconnect(node.NodeID) {}

// OnPeerRefused implements node.Handler.
func (n *planNode) OnPeerRefused(node.NodeID) {}

// OnClient implements node.Handler.
func (n *planNode) OnClient(node.ConnID, wire.Message) {}

// OnClientGone implements node.Handler.
func (n *planNode) OnClientGone(node.ConnID) {}

// TestReassignmentsCountOnlyUnprovokedPlans runs a world whose leader
// gives up on n1 at scripted times around a pause of n1, an isolation of
// n2 and a crash of n1, and checks which plans the history counts as
// unprovoked: the ones against a running n1 that no fault touched
// recently, and nothing else.
func TestReassignmentsCountOnlyUnprovokedPlans(t *testing.T) {
	lat := netsim.Latency{Min: time.Millisecond, Max: 2 * time.Millisecond}
	moves := []plannedMove{
		{at: time.Second, from: 1, to: 2, epoch: 2},                  // n1 up, nothing happened: counted
		{at: 1100 * time.Millisecond, from: 1, to: 2, epoch: 2},      // the same plan again: not a new one
		{at: 1200 * time.Millisecond, from: 2, to: 2, epoch: 3},      // the owner stays: no reassignment
		{at: 2200 * time.Millisecond, from: 1, to: 2, epoch: 4},      // n1 paused
		{at: 2700 * time.Millisecond, from: 1, to: 2, epoch: 5},      // right after the pause
		{at: 5 * time.Second, from: 1, to: 2, epoch: 6},              // the pause is long past: counted
		{at: 6200 * time.Millisecond, from: 1, to: 2, epoch: 7},      // n2 isolated: the link n1-n2 is cut
		{at: 7050 * time.Millisecond, from: 1, to: 2, epoch: 8},      // n1 crashed
		{at: 7500 * time.Millisecond, from: 1, to: 2, epoch: 9},      // n1 just restarted
		{at: 9800 * time.Millisecond, from: 1, to: 3, epoch: 10},     // 2.7s after the restart: counted
		{at: 9900 * time.Millisecond, from: 2, to: 3, epoch: 10},     // n2's isolation is long past: counted
		{at: 9950 * time.Millisecond, from: 3, to: 1, epoch: 11},     // n2's isolation cut n2-n3 too, long ago: counted
		{at: 10500 * time.Millisecond, from: 1, to: 2, epoch: 12},    // the calm liveness phase: counted
		{at: 10550 * time.Millisecond, detect: node.DetectHeartbeat}, // the mode switches
		{at: 10600 * time.Millisecond, from: 1, to: 2, epoch: 13},    // another epoch, another plan: counted
	}
	sc := Scenario{
		Seed: 5, Nodes: 3, Safety: 10 * time.Second, Liveness: time.Second, Detection: node.DetectEager,
		Swarm: Swarm{Net: netsim.LinkProfile{Latency: lat}, Disk: DiskProfile{SyncLatency: lat}},
		Faults: []Fault{
			{At: 2 * time.Second, Kind: FaultPause, Node: 0, Length: 500 * time.Millisecond},
			{At: 6 * time.Second, Kind: FaultIsolate, Node: 1, Length: 300 * time.Millisecond},
			{At: 7 * time.Second, Kind: FaultCrash, Node: 0, Length: 100 * time.Millisecond},
		},
	}
	res := NewWorld(sc, &planSystem{moves: moves}, nil).Run()
	var got []string
	for _, r := range res.History.Reassignments {
		mode := node.DetectEager // the scenario's, until a node applies another
		if r.At > 10550*time.Millisecond {
			mode = node.DetectHeartbeat
		}
		if r.Mode != mode {
			t.Errorf("%s: mode %d, want %d", r, r.Mode, mode)
		}
		verdict := "counted"
		if !r.Unprovoked() {
			verdict = strings.Fields(r.Cause)[0]
		}
		got = append(got, r.At.String()+" "+verdict)
	}
	want := []string{"1s counted", "2.2s owner", "2.7s pause", "5s counted", "6.2s isolate", "7.05s owner", "7.5s owner",
		"9.8s counted", "9.9s counted", "9.95s counted", "10.5s counted", "10.6s counted"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("reassignments judged\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
	if n := len(res.History.UnprovokedReassignments()); n != 7 {
		t.Fatalf("%d unprovoked reassignments, want 7", n)
	}
}

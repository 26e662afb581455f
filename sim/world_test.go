package sim_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// calmScenario is a three-node scenario with a quiet network and disk and
// only the given faults.
func calmScenario(faults ...sim.Fault) sim.Scenario {
	lat := netsim.Latency{Min: time.Millisecond, Max: 2 * time.Millisecond}
	return sim.Scenario{
		Seed: 11, Nodes: 3, Safety: 3 * time.Second, Liveness: 2 * time.Second,
		Swarm: sim.Swarm{
			Net:  netsim.LinkProfile{Latency: lat},
			Disk: sim.DiskProfile{SyncLatency: lat},
		},
		Faults: faults,
	}
}

func runTraced(t *testing.T, sc sim.Scenario, sys sim.System) (sim.Result, string) {
	t.Helper()
	var buf bytes.Buffer
	res := sim.NewWorld(sc, sys, &buf).Run()
	return res, buf.String()
}

func linesWith(trace, substr string) []string {
	var out []string
	for _, l := range strings.Split(trace, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func TestCrashAtBoundaryStopsTheHandlerThere(t *testing.T) {
	sc := calmScenario(sim.Fault{At: time.Second, Kind: sim.FaultCrashAt, Node: 1,
		Boundary: "storage.before.sync", Hit: 2, Length: 300 * time.Millisecond})
	res, trace := runTraced(t, sc, sim.NewCounterSystem())
	crashes := linesWith(trace, "n2   crash (at storage.before.sync)")
	if len(crashes) != 1 {
		t.Fatalf("want one crash of n2 at the boundary, trace has %d:\n%s", len(crashes), strings.Join(linesWith(trace, "crash"), "\n"))
	}
	if len(linesWith(trace, "n2   start inc=3")) != 1 {
		t.Fatal("n2 did not restart after its boundary crash")
	}
	if res.Failed() {
		t.Fatalf("a boundary crash broke the counter: %v", res.Violations)
	}
}

// A crash-at-step fault waits for whichever process first reaches its
// boundary after its time, crashes that one alone, once.
func TestCrashAtStepStrikesTheFirstProcessToReachIt(t *testing.T) {
	sc := calmScenario(sim.Fault{At: time.Second, Kind: sim.FaultCrashAtStep,
		Boundary: "storage.before.sync", Length: 300 * time.Millisecond})
	res, trace := runTraced(t, sc, sim.NewCounterSystem())
	crashes := linesWith(trace, "crash (at step storage.before.sync)")
	if len(crashes) != 1 {
		t.Fatalf("want one crash at the step, trace has %d:\n%s", len(crashes), strings.Join(linesWith(trace, "crash"), "\n"))
	}
	at, err := time.ParseDuration(strings.Fields(crashes[0])[0] + "s")
	if err != nil || at < time.Second {
		t.Fatalf("the crash came at %v (%v), before the fault's time of 1s: %s", at, err, crashes[0])
	}
	if res.Failed() {
		t.Fatalf("a crash at a step broke the counter: %v", res.Violations)
	}
}

func TestCrashResetsPeersButPartitionsAreSilent(t *testing.T) {
	crash := sim.Fault{At: time.Second, Kind: sim.FaultCrash, Node: 0, Length: 500 * time.Millisecond}
	_, trace := runTraced(t, calmScenario(crash), sim.NewCounterSystem())
	if got := len(linesWith(trace, "   disconnect peer=n1")); got != 2 {
		t.Fatalf("both peers should see n1's reset once, saw %d", got)
	}
	if got := len(linesWith(trace, "   refused peer=n1")); got != 0 {
		t.Fatalf("a scenario without refusals refused %d connections", got)
	}
	isolate := sim.Fault{At: 900 * time.Millisecond, Kind: sim.FaultIsolate, Node: 0, Length: time.Second}
	_, trace = runTraced(t, calmScenario(isolate, crash), sim.NewCounterSystem())
	if got := linesWith(trace, "   disconnect peer=n1"); len(got) != 0 {
		t.Fatalf("a crash behind a partition must be silent, saw:\n%s", strings.Join(got, "\n"))
	}
}

// With refusals modeled, each peer that saw a crashed process's reset is
// refused a connection to it a round trip later, while it stays down; a
// process back by then refuses nothing, and a paused one keeps its port.
func TestACrashedProcessRefusesConnectionsWhileDown(t *testing.T) {
	withRefusals := func(faults ...sim.Fault) sim.Scenario {
		sc := calmScenario(faults...)
		sc.Refusals = true
		return sc
	}
	crash := sim.Fault{At: time.Second, Kind: sim.FaultCrash, Node: 0, Length: 500 * time.Millisecond}
	_, trace := runTraced(t, withRefusals(crash), sim.NewCounterSystem())
	if got := len(linesWith(trace, "   refused peer=n1")); got != 2 {
		t.Fatalf("both peers should be refused by the crashed n1 once, saw %d", got)
	}
	quick := sim.Fault{At: time.Second, Kind: sim.FaultCrash, Node: 0, Length: time.Millisecond}
	_, trace = runTraced(t, withRefusals(quick), sim.NewCounterSystem())
	if got := linesWith(trace, "   refused peer=n1"); len(got) != 0 {
		t.Fatalf("n1, back within a millisecond, refused connections:\n%s", strings.Join(got, "\n"))
	}
	pause := sim.Fault{At: time.Second, Kind: sim.FaultPause, Node: 0, Length: 500 * time.Millisecond}
	_, trace = runTraced(t, withRefusals(pause), sim.NewCounterSystem())
	if got := linesWith(trace, "refused peer="); len(got) != 0 {
		t.Fatalf("a paused process refused connections:\n%s", strings.Join(got, "\n"))
	}
}

// clockSystem runs nodes that report their clock every 100ms.
type clockSystem struct {
	readings map[node.NodeID][]time.Duration // Now - Epoch, per tick
	virtual  map[node.NodeID][]time.Duration // virtual time of each tick
}

type clockNode struct {
	env node.Env
	seq uint64
}

func (c *clockNode) Start() { c.env.After(100*time.Millisecond, node.Timer{Seq: 1}) }
func (c *clockNode) OnTimer(t node.Timer) {
	c.env.Emit(event.Event{Name: "clock", Attrs: []slog.Attr{slog.Int64("since", int64(c.env.Now().Sub(sim.Epoch)))}})
	c.env.After(100*time.Millisecond, node.Timer{Seq: t.Seq + 1})
}
func (c *clockNode) OnMessage(node.NodeID, wire.Message) {}
func (c *clockNode) OnSynced(node.SyncToken, error)      {}
func (c *clockNode) OnDisconnect(node.NodeID)            {}
func (c *clockNode) OnPeerRefused(node.NodeID)           {}
func (c *clockNode) OnClient(node.ConnID, wire.Message)  {}
func (c *clockNode) OnClientGone(node.ConnID)            {}
func (s *clockSystem) LivenessStart(*sim.World)          {}
func (s *clockSystem) Check(*sim.World) []sim.Violation  { return nil }
func (s *clockSystem) Summary() string                   { return "" }
func (s *clockSystem) NewNode(id node.NodeID, _ []node.NodeID, env node.Env, _ bool) node.Handler {
	return &clockNode{env: env}
}
func (s *clockSystem) Observe(now time.Duration, id node.NodeID, e event.Event) {
	s.readings[id] = append(s.readings[id], time.Duration(e.Attrs[0].Value.Int64()))
	s.virtual[id] = append(s.virtual[id], now)
}

func TestClockSkewJumpsAndPauses(t *testing.T) {
	sc := calmScenario(
		sim.Fault{At: 1050 * time.Millisecond, Kind: sim.FaultClockJump, Node: 0, Extra: 5 * time.Second},
		sim.Fault{At: 2050 * time.Millisecond, Kind: sim.FaultPause, Node: 1, Length: 500 * time.Millisecond},
	)
	sc.Swarm.ClockMax = 300 * time.Millisecond
	sys := &clockSystem{readings: map[node.NodeID][]time.Duration{}, virtual: map[node.NodeID][]time.Duration{}}
	runTraced(t, sc, sys)
	offsets := map[node.NodeID]time.Duration{}
	for id := node.NodeID(1); id <= 3; id++ {
		offsets[id] = sys.readings[id][0] - sys.virtual[id][0]
		if offsets[id] < -300*time.Millisecond || offsets[id] > 300*time.Millisecond {
			t.Errorf("%s skew %v outside ±300ms", id, offsets[id])
		}
	}
	if offsets[1] == offsets[2] && offsets[2] == offsets[3] {
		t.Error("every node has the same clock offset; skew is not applied")
	}
	// n1's clock jumps by 5s at 1.05s; its timers keep their 100ms pace.
	for i, v := range sys.virtual[1] {
		want := offsets[1]
		if v > 1050*time.Millisecond {
			want += 5 * time.Second
		}
		if got := sys.readings[1][i] - v; got != want {
			t.Fatalf("n1 tick %d at %v: clock offset %v, want %v", i, v, got, want)
		}
		if i > 0 && v-sys.virtual[1][i-1] != 100*time.Millisecond {
			t.Fatalf("n1's timers drifted after a clock jump: %v after %v", v, sys.virtual[1][i-1])
		}
	}
	// n2 is paused in [2.05s, 2.55s): no tick fires inside, and the ticks
	// that came due fire at resume.
	resumed := 0
	for _, v := range sys.virtual[2] {
		if v > 2050*time.Millisecond && v < 2550*time.Millisecond {
			t.Fatalf("n2 ran at %v while paused", v)
		}
		if v == 2550*time.Millisecond {
			resumed++
		}
	}
	if resumed != 1 {
		t.Fatalf("want the one due tick at resume, got %d", resumed)
	}
}

// bootHaltSystem runs clock nodes, except that n1 halts inside its first
// Start, while the world is still booting n2 and n3.
type bootHaltSystem struct {
	clockSystem
	halted bool
}

type bootHaltNode struct {
	clockNode
	halt bool
}

func (n *bootHaltNode) Start() {
	if n.halt {
		n.env.Halt("boot failed")
	}
	n.clockNode.Start()
}

func (s *bootHaltSystem) NewNode(id node.NodeID, _ []node.NodeID, env node.Env, _ bool) node.Handler {
	halt := id == 1 && !s.halted
	s.halted = s.halted || halt
	return &bootHaltNode{clockNode: clockNode{env: env}, halt: halt}
}

// A process that fails while booting (say, its first fsync fails) crashes
// before its peers exist: nobody is told of a reset, and it restarts.
func TestCrashWhileTheWorldBoots(t *testing.T) {
	sys := &bootHaltSystem{clockSystem: clockSystem{
		readings: map[node.NodeID][]time.Duration{}, virtual: map[node.NodeID][]time.Duration{},
	}}
	res, trace := runTraced(t, calmScenario(), sys)
	if got := linesWith(trace, "n1   crash (halt"); len(got) != 1 {
		t.Fatalf("want n1 to crash once while booting, got:\n%s", strings.Join(linesWith(trace, "crash"), "\n"))
	}
	if got := linesWith(trace, "disconnect peer=n1"); len(got) != 0 {
		t.Fatalf("peers not yet booted were told of a reset:\n%s", strings.Join(got, "\n"))
	}
	if len(linesWith(trace, "n1   start inc=3")) != 1 || len(sys.readings[1]) == 0 {
		t.Fatal("n1 did not restart and run after its boot failure")
	}
	if res.Failed() {
		t.Fatalf("unexpected violations: %v", res.Violations)
	}
}

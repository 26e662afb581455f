//go:build linux

package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/eventlog"
	"github.com/cairnmq/cairn/live/status"
)

// publishRate is the steady publisher's rate, in messages a second.
const publishRate = 200

// placement says which node a scenario wants as the queue's owner.
type placement int

const (
	anyOwner placement = iota
	ownerNotLeader
	ownerLeader
)

// placementTries bounds the queues a scenario creates looking for the
// owner it wants: each new name lands on a given node with a chance of
// one in the cluster's size.
const placementTries = 40

// scenarioRun is one run of a scenario under way.
type scenarioRun struct {
	t        *testing.T
	ctx      context.Context
	lab      *netLab
	pc       *procCluster
	queue    string
	owner    int // the node serving the queue before any cut
	leader   int // the metadata leader then
	mon      *statusMonitor
	pub      *steadyPublisher
	con      *ackingConsumer
	episodes []cutEpisode
}

// startScenario builds a lab of n nodes, starts a cluster in it from the
// binaries in bin, places a queue as where asks, and starts the monitor,
// the consumer and the publisher; it returns once publishes are being
// confirmed.
func startScenario(t *testing.T, ctx context.Context, bin string, n int, where placement) *scenarioRun {
	lab := newNetLab(t, n)
	pc := newProcClusterAt(t, bin, lab.addrs(), "info", fmt.Sprintf("detection = %q\n%s", *partitionDetection, nodeConfig))
	for _, nd := range pc.nodes {
		pc.waitHealthy(nd, serviceBound)
	}
	sr := &scenarioRun{t: t, ctx: ctx, lab: lab, pc: pc}
	sr.place(where)
	sr.mon = startMonitor(ctx, pc, sr.queue)
	sr.con = startConsumer(t, ctx, pc.clientAddrs(), sr.queue)
	sr.pub = startPublisher(t, ctx, pc.clientAddrs(), sr.queue, publishRate)
	warm := time.Now()
	for !sr.pub.confirmedAfter(warm) {
		if time.Since(warm) > serviceBound {
			t.Fatalf("no publish confirmed within %v on a healthy cluster", serviceBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	return sr
}

// place creates queues until one's owner is where the scenario wants it.
func (sr *scenarioRun) place(where placement) {
	c := dialCluster(sr.t, sr.ctx, sr.pc.clientAddrs())
	defer c.Close()
	for i := range placementTries {
		name := fmt.Sprintf("partition-%d", i+1)
		createWhenReady(sr.t, sr.ctx, c, name, client.PolicyMajority)
		owner, leader := sr.servingOwner(name)
		if where == anyOwner || (where == ownerLeader) == (owner == leader) {
			sr.queue, sr.owner, sr.leader = name, owner, leader
			sr.t.Logf("queue %s: owner n%d, metadata leader n%d", name, owner, leader)
			return
		}
	}
	sr.t.Fatalf("none of %d queues had the owner placement wanted", placementTries)
}

// servingOwner waits until a node serves queue and returns it and the
// metadata leader it knows.
func (sr *scenarioRun) servingOwner(queue string) (owner, leader int) {
	deadline := time.Now().Add(serviceBound)
	for time.Now().Before(deadline) {
		for _, nd := range sr.pc.nodes {
			sctx, cancel := context.WithTimeout(sr.ctx, time.Second)
			s, err := status.FetchAuth(sctx, nd.httpAddr, status.Auth{Secret: []byte(processSecret)})
			cancel()
			if err != nil || s.MetaLeader == 0 {
				continue
			}
			for _, q := range s.Queues {
				if q.Name == queue && q.Active {
					return nd.id, int(s.MetaLeader)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	sr.t.Fatalf("no node served %s within %v", queue, serviceBound)
	return 0, 0
}

// lastView is node id's latest answer to the monitor.
func (sr *scenarioRun) lastView(id int) (nodeView, bool) {
	rounds := sr.mon.snapshot()
	for i := len(rounds) - 1; i >= 0; i-- {
		if v, ok := rounds[i].views[id]; ok {
			return v, true
		}
	}
	return nodeView{}, false
}

// cut partitions node id and records the episode, noting whether the
// node served the queue, and at which epoch, as last seen.
func (sr *scenarioRun) cut(id int, kind linkCut) {
	sr.t.Helper()
	v, _ := sr.lastView(id)
	ep := cutEpisode{node: id, kind: kind, owner: v.serving(), epoch: v.q.ReplicaEpoch}
	if err := sr.lab.cut(id-1, kind); err != nil {
		sr.t.Fatal(err)
	}
	// The cut is certainly in force once iptables-restore has returned,
	// not before: it takes some milliseconds to start in the namespace.
	ep.at = time.Now()
	sr.episodes = append(sr.episodes, ep)
	sr.t.Logf("n%d %s (serving: %v, epoch %d)", id, kind, ep.owner, ep.epoch)
}

// heal ends every cut of node id.
func (sr *scenarioRun) heal(id int) {
	sr.t.Helper()
	// The episode ends when the heal begins: as soon as the first rule
	// is gone, packets the cut held (TCP retransmits them) may arrive.
	began := time.Now()
	if err := sr.lab.heal(id - 1); err != nil {
		sr.t.Fatal(err)
	}
	for i := range sr.episodes {
		if sr.episodes[i].node == id && sr.episodes[i].healed.IsZero() {
			sr.episodes[i].healed = began
		}
	}
	sr.t.Logf("n%d healed", id)
}

// holdCut keeps the current cuts for at least least and, when the cut
// node served the queue, until another node serves it and a publish
// started after the cut is confirmed (the test fails if that takes
// longer than serviceBound). The cut stays a further tail, long enough
// for two owners to show in the status, if the old one kept claiming.
func (sr *scenarioRun) holdCut(ep cutEpisode, least, tail time.Duration) {
	sr.t.Helper()
	if ep.owner {
		sr.waitServedElsewhere(ep)
	}
	time.Sleep(max(time.Until(ep.at.Add(least)), tail))
}

// waitServedElsewhere waits until a node serves the queue at an epoch
// above ep's (the cut node may, once healed), and a publish started after the cut is
// confirmed; the test fails if that takes longer than serviceBound.
func (sr *scenarioRun) waitServedElsewhere(ep cutEpisode) {
	sr.t.Helper()
	if _, ok := sr.mon.waitFor(ep.at, serviceBound, func(r statusRound) bool {
		_, _, ok := newOwnerServing([]statusRound{r}, ep.at, ep.epoch)
		return ok
	}); !ok {
		sr.t.Fatalf("no node served %s above epoch %d within %v of n%d being %s", sr.queue, ep.epoch, serviceBound, ep.node, ep.kind)
	}
	for !sr.pub.confirmedAfter(ep.at) {
		if time.Since(ep.at) > serviceBound {
			sr.t.Fatalf("no publish started after n%d was %s was confirmed within %v", ep.node, ep.kind, serviceBound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// current is the node serving the queue in the latest round, or else
// the owner the metadata names.
func (sr *scenarioRun) current() int {
	rounds := sr.mon.snapshot()
	for i := len(rounds) - 1; i >= 0; i-- {
		if s := rounds[i].servingNodes(); len(s) == 1 {
			return s[0]
		}
		for _, v := range rounds[i].views {
			if v.listed && v.q.Owner != 0 {
				return int(v.q.Owner)
			}
		}
	}
	return sr.owner
}

// waitRecovering polls every node but old without pause until one
// reports the metadata naming another node the queue's owner at an
// epoch above epoch, and returns that node and the epoch; 0 if none did
// within serviceBound.
func (sr *scenarioRun) waitRecovering(old int, epoch uint64) (candidate int, at uint64) {
	ctx, cancel := context.WithTimeout(sr.ctx, serviceBound)
	defer cancel()
	type found struct {
		id    int
		epoch uint64
	}
	seen := make(chan found, len(sr.pc.nodes))
	for _, nd := range sr.pc.others(sr.pc.nodes[old-1]) {
		go func() {
			for ctx.Err() == nil {
				if q, ok := queueOf(ctx, nd, sr.queue); ok && q.Owner != 0 && int(q.Owner) != old && q.Epoch > epoch {
					seen <- found{int(q.Owner), q.Epoch}
					return
				}
			}
		}()
	}
	select {
	case f := <-seen:
		return f.id, f.epoch
	case <-ctx.Done():
		return 0, 0
	}
}

// activatedBefore reports whether node id logged activating the queue
// at epoch before the time given.
func (sr *scenarioRun) activatedBefore(id int, epoch uint64, before time.Time) bool {
	at, ok, err := eventlog.FirstLogged([]string{sr.pc.nodes[id-1].log},
		eventlog.Event{Name: event.QueueActive, Key: event.KeyEpoch, Value: strconv.FormatUint(epoch, 10)}, before.Add(-time.Minute))
	return err == nil && ok && at.Before(before)
}

// fireArmed puts an armed cut of node id in force and records it as
// cut would.
func (sr *scenarioRun) fireArmed(id int, a *armedCut) {
	sr.t.Helper()
	v, _ := sr.lastView(id)
	if err := a.fire(); err != nil {
		sr.t.Fatal(err)
	}
	sr.episodes = append(sr.episodes, cutEpisode{node: id, kind: cutAll, owner: v.serving(), epoch: v.q.ReplicaEpoch, at: time.Now()})
	sr.t.Logf("n%d %s by an armed cut", id, cutAll)
}

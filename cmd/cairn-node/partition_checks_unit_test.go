//go:build linux

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// The partition suite's judgements, on made-up observations: each must
// flag what it exists to flag and pass what is allowed.

var checkOrigin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return checkOrigin.Add(time.Duration(ms) * time.Millisecond) }

// ownerView is a node serving at epoch with commit confirmed; follower
// a replica that does not serve.
func ownerView(epoch, commit uint64) nodeView {
	return nodeView{listed: true, q: status.Queue{Role: "owner", Active: true, ReplicaEpoch: epoch, Commit: commit}}
}

func follower(epoch uint64) nodeView {
	return nodeView{listed: true, q: status.Queue{Role: "follower", ReplicaEpoch: epoch}}
}

func round(ms int, views map[int]nodeView) statusRound {
	return statusRound{began: at(ms), ended: at(ms + 10), views: views}
}

func TestDoubleServingFlagsTwoServingNodesInOneRound(t *testing.T) {
	rounds := []statusRound{
		round(0, map[int]nodeView{1: ownerView(1, 5), 2: follower(1)}),
		round(25, map[int]nodeView{1: ownerView(1, 5), 2: ownerView(2, 5)}),
		round(50, map[int]nodeView{2: ownerView(2, 6)}), // n1 did not answer: skipped
	}
	got := doubleServing(rounds, at(0))
	if len(got) != 1 || !strings.Contains(got[0], "n1 (epoch 1") || !strings.Contains(got[0], "n2 (epoch 2") {
		t.Fatalf("want the one round with n1 and n2 serving, got %q", got)
	}
}

func TestCommitGrowthFlagsAnOwnerConfirmingWhileCut(t *testing.T) {
	rounds := []statusRound{
		round(0, map[int]nodeView{1: ownerView(1, 10)}), // before from: ignored
		round(300, map[int]nodeView{1: ownerView(1, 12)}),
		round(325, map[int]nodeView{1: ownerView(1, 12), 2: ownerView(2, 30)}),
		round(350, map[int]nodeView{1: ownerView(1, 13)}),
	}
	if msg, _ := commitGrowth(rounds[:3], 1, 1, at(200), at(1000)); msg != "" {
		t.Fatalf("a steady confirmed index was flagged: %s", msg)
	}
	if msg, _ := commitGrowth(rounds, 1, 1, at(200), at(1000)); !strings.Contains(msg, "from 12 to 13") {
		t.Fatalf("want the rise from 12 to 13 flagged, got %q", msg)
	}
	if msg, _ := commitGrowth(rounds, 1, 1, at(200), at(340)); msg != "" {
		t.Fatalf("a rise after the heal was flagged: %s", msg)
	}
	// A round that began before the heal but whose answers came in
	// after it began saw what the heal let through.
	if msg, _ := commitGrowth(rounds, 1, 1, at(200), at(355)); msg != "" {
		t.Fatalf("a rise seen by a round that overlapped the heal was flagged: %s", msg)
	}
}

func TestStaleConfirmationsFlagsConfirmsWhileNoOtherNodeServes(t *testing.T) {
	var rounds []statusRound
	for ms := 0; ms < 3000; ms += 25 {
		views := map[int]nodeView{2: follower(1), 3: follower(1)}
		if ms >= 1000 {
			views[2] = ownerView(2, 100)
		}
		rounds = append(rounds, round(ms, views))
	}
	ok := func(id uint64, ms int) publishRecord {
		return publishRecord{id: client.MessageID{Producer: 1, Seq: id}, sent: at(ms - 5), done: at(ms)}
	}
	pr := &partitionRun{nodes: 3, rounds: rounds, stopped: at(3000),
		episodes: []cutEpisode{{node: 1, kind: cutPeers, owner: true, epoch: 1, at: at(0), healed: at(2500)}},
		pubs: []publishRecord{ok(1, 100), ok(2, 600), ok(3, 1500),
			{id: client.MessageID{Producer: 1, Seq: 4}, sent: at(700), done: at(800), err: errors.New("unknown outcome")}},
	}
	got := pr.staleConfirmations()
	if len(got) != 1 || !strings.Contains(got[0], "p1.2") {
		t.Fatalf("want only p1.2 flagged (after the in-flight bound, before n2 served), got %q", got)
	}
	pr.episodes[0].kind = cutAll
	if got := pr.staleConfirmations(); len(got) != 0 {
		t.Fatalf("confirmations were blamed on an isolated owner, which no client can reach: %q", got)
	}
	pr.episodes[0].kind = cutPeers
	// A node too busy to list its queues in time may already serve.
	busy := rounds[16].views[2]
	rounds[16].views[2] = nodeView{}
	if got := pr.staleConfirmations(); len(got) != 0 {
		t.Fatalf("a round in which n2 listed no queue was taken as n2 not serving: %q", got)
	}
	rounds[16].views[2] = busy
	// A recovered owner outwaiting the old owner's quorum confirms
	// publishes while its status still says candidate: the window ends
	// there too.
	outwaiting := rounds[16].views[2]
	rounds[16].views[2] = nodeView{listed: true, q: status.Queue{Role: "candidate", ReplicaEpoch: 2, Commit: 90}}
	if got := pr.staleConfirmations(); len(got) != 0 {
		t.Fatalf("a confirmation while another node was a candidate was blamed on the cut owner: %q", got)
	}
	rounds[16].views[2] = outwaiting
	// A node that serves at an older epoch may confirm too (the cut
	// owner's predecessor, say): the window ends when it serves.
	for i := range rounds {
		if rounds[i].began.After(at(400)) {
			rounds[i].views[3] = ownerView(0, 5)
		}
	}
	if got := pr.staleConfirmations(); len(got) != 0 {
		t.Fatalf("a confirmation while another node served was blamed on the cut owner: %q", got)
	}
	pr.episodes[0].owner = false
	if got := pr.staleConfirmations(); len(got) != 0 {
		t.Fatalf("the cut of a node that did not own the queue was judged as an owner's: %q", got)
	}
}

func TestDuplicateReportCountsRedeliveriesAndFlagsSettledOnes(t *testing.T) {
	id := func(seq uint64) client.MessageID { return client.MessageID{Producer: 7, Seq: seq} }
	pr := &partitionRun{
		pubs: []publishRecord{{id: id(1)}, {id: id(2)}},
		deliveries: []deliveryRecord{
			{id: id(1), attempt: 1, at: at(10)}, {id: id(1), attempt: 2, at: at(20)}, // lease lapsed, unsettled
			{id: id(2), attempt: 1, at: at(30)}, {id: id(2), attempt: 2, at: at(50)}, // after its settle
			{id: id(9), attempt: 1, at: at(60)}, // never published
		},
		settled: map[client.MessageID]time.Time{id(2): at(40)},
	}
	redelivered, bad := pr.duplicateReport()
	if redelivered != 2 {
		t.Errorf("redeliveries: got %d, want 2", redelivered)
	}
	if len(bad) != 2 || !strings.Contains(bad[0], "p7.2") || !strings.Contains(bad[1], "p7.9") {
		t.Errorf("want p7.2 (after its settle) and p7.9 (never published) flagged, got %q", bad)
	}
}

func TestLongestGapCountsFromTheLastConfirmBeforeTheCut(t *testing.T) {
	confirms := []time.Time{at(900), at(-100), at(100), at(1000)}
	if got, want := longestGap(confirms, at(0)), 800*time.Millisecond; got != want {
		t.Fatalf("longest gap: got %v, want %v", got, want)
	}
	if got := longestGap(nil, at(0)); got != 0 {
		t.Fatalf("longest gap of nothing: got %v", got)
	}
}

func TestConvergedNamesWhatDiffers(t *testing.T) {
	owner := ownerView(2, 40)
	owner.q.LastIndex, owner.q.Replicas = 40, []uint32{1, 2, 3}
	agree := follower(2)
	agree.q.LastIndex = 40
	behind := follower(2)
	behind.q.LastIndex = 39
	if why := converged(round(0, map[int]nodeView{2: owner, 1: agree, 3: agree})); why != "" {
		t.Fatalf("agreeing replicas judged apart: %s", why)
	}
	if why := converged(round(0, map[int]nodeView{2: owner, 1: agree, 3: behind})); !strings.Contains(why, "n3") {
		t.Fatalf("want n3 named as behind, got %q", why)
	}
	if why := converged(round(0, map[int]nodeView{2: owner, 1: agree})); !strings.Contains(why, "n3 did not answer") {
		t.Fatalf("want n3 named as silent, got %q", why)
	}
}

package event

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// sample is one event built by its constructor, with the trace line it
// must render to and the kinds of its attributes, in order. The renderings
// are the trace format: a change here changes every trace hash.
type sample struct {
	e     Event
	text  string
	kinds string
}

var errSample = errors.New("disk on fire")

var stage = StageEnd{Queue: "orders", Epoch: 2, Stage: "seal", Took: 1500 * time.Microsecond}

var samples = []sample{
	{NewCheckpointBuilt("orders", 40, 512), "checkpoint.built q=orders index=40 bytes=512", "S U I"},
	{NewCheckpointInstalled("orders", 40, 2), "checkpoint.installed q=orders index=40 from=n2", "S U S"},
	{NewCheckpointRefused("orders", 40, "beyond the commit"), "checkpoint.refused q=orders index=40 why=beyond the commit", "S U S"},
	{NewCheckpointMismatch("orders", 40, 3), "checkpoint.mismatch q=orders index=40 from=n3", "S U S"},
	{NewCheckpointDurable("orders", 5, 40, "ab12"), "checkpoint.durable q=orders inc=5 index=40 digest=ab12", "S U U S"},
	{NewCheckpointAsked("orders", 40, 2, "reused"), "checkpoint.asked q=orders index=40 epoch=2 why=reused", "S U U S"},
	{NewCheckpointProposed("orders", 5, 40, 2, []uint32{1, 2, 3}), "checkpoint.proposed q=orders inc=5 index=40 epoch=2 members=1,2,3", "S U U U S"},
	{NewCheckpointCertified("orders", 5, 40, 2, []uint32{1, 2, 3}), "checkpoint.certified q=orders inc=5 index=40 epoch=2 members=1,2,3", "S U U U S"},
	{NewQueueCompacted("orders", 5, 33), "queue.compacted q=orders inc=5 index=33", "S U U"},
	{NewQueueRebuilt("orders", 40, 9000, 3, "memory"), "queue.rebuilt q=orders index=40 last=9000 steps=3 base=memory", "S U U U S"},
	{NewQueueOpen("orders", 5, 7, 2), "queue.open q=orders inc=5 last=7 epoch=2", "S U U U"},
	{NewQueueSealed("orders", 5, 3, 2), "queue.sealed q=orders inc=5 epoch=3 from=n2", "S U U S"},
	{NewQueueActive("orders", 2, 5, 9), "queue.active q=orders epoch=2 inc=5 last=9", "S U U U"},
	{NewQueueRole("orders", "follower", "owner", 2, "elected"), "queue.role q=orders from=follower to=owner epoch=2 why=elected", "S S S U S"},
	{NewQueueFenced("orders", errSample), "queue.fenced q=orders err=disk on fire", "S S"},
	{NewQueueDeliver("orders", "c1/4", 3), "queue.deliver q=orders id=c1/4 lease=3", "S S U"},
	{NewQueueDeadLetter("orders", "p1.4", 3), "queue.dead-letter q=orders id=p1.4 deliveries=3", "S S U"},
	{NewQueueCountsCarried("orders", 3, 2), "queue.counts-carried q=orders epoch=3 raised=2", "S U I"},
	{NewQueueDeadLetterSent("orders", "p1.4", "parked", 2), "queue.dead-letter-sent q=orders id=p1.4 to=parked node=2", "S S S U"},
	{NewQueueMoveRemembered("parked", "p1.4", "orders"), "queue.move-remembered q=parked id=p1.4 from=orders", "S S S"},
	{NewMetaApplied(102, 12), "meta.applied index=102 term=12", "U U"},
	{NewQueuePurgeWritten("orders", "p3.9", 14, 13), "queue.purge-written q=orders id=p3.9 index=14 after=13", "S S U U"},
	{NewQueueFollowerFull("orders", 2), "queue.follower-full q=orders node=n2", "S S"},
	{NewQueueFollowerRoom("orders", 2), "queue.follower-room q=orders node=n2", "S S"},
	{NewQueueHoldEnded("orders", 3, 12), "queue.hold-ended q=orders epoch=3 held=12", "S U I"},
	{NewQueueLeaseLapsed("orders", 3, 61*time.Millisecond), "queue.lease-lapsed q=orders epoch=3 us=61000", "S U I"},
	{NewQueueSubscriberQuiet("orders", 7, 2, 100*time.Millisecond), "queue.subscriber-quiet q=orders conn=7 quiet=2 us=100000", "S U I I"},
	{NewQueueSubscriberHeard("orders", 7), "queue.subscriber-heard q=orders conn=7", "S U"},
	{NewQueueQuorumLost("orders", 3, 401*time.Millisecond), "queue.quorum-lost q=orders epoch=3 us=401000", "S U I"},
	{NewQueueQuorumRegained("orders", 3, 20*time.Millisecond), "queue.quorum-regained q=orders epoch=3 us=20000", "S U I"},
	{NewQueueResting("orders", 3), "queue.resting q=orders epoch=3", "S U"},
	{NewQueueWaking("orders", 3, 2500*time.Millisecond), "queue.waking q=orders epoch=3 us=2500000", "S U I"},
	{NewQueueRestCutOff("orders", 3, 1700*time.Millisecond), "queue.rest-cut-off q=orders epoch=3 us=1700000", "S U I"},
	{NewQueueActivationWaits("orders", 4, 350*time.Millisecond), "queue.activation-waits q=orders epoch=4 us=350000", "S U I"},
	{NewQueueActivationOutwaits("orders", 5, 80*time.Millisecond), "queue.activation-outwaits q=orders epoch=5 us=80000", "S U I"},
	{NewQueueOutwaited("orders", 5, 3), "queue.outwaited q=orders epoch=5 admitted=3", "S U I"},
	{NewQueueSecondWriter("orders", 3, 2), "queue.second-writer q=orders from=n3 epoch=2", "S S U"},
	{NewQueueBadAppend("orders", 2, 1, errSample), "queue.bad-append q=orders epoch=2 from=n1 err=disk on fire", "S U S S"},
	{NewQueueRefusedTruncation("orders", 2, 1, errSample), "queue.refused-truncation q=orders epoch=2 from=n1 err=disk on fire", "S U S S"},
	{NewQueueTruncate("orders", 5, 4), "queue.truncate q=orders inc=5 after=4", "S U U"},
	{NewQueueReported("orders", 5, 2, 8), "queue.reported q=orders inc=5 epoch=2 durable=8", "S U U U"},
	{NewQueueDurable("orders", 5, 8), "queue.durable q=orders inc=5 index=8", "S U U"},
	{NewQueueTrusted("orders", 2, "verified"), "queue.trusted q=orders epoch=2 why=verified", "S U S"},
	{NewQueueCommit("orders", 6, 2), "queue.commit q=orders index=6 epoch=2", "S U U"},
	{NewQueueStale("orders", 2, "a newer epoch"), "queue.stale q=orders epoch=2 why=a newer epoch", "S U S"},
	{NewQueueOwnerStopped("orders", 2, 3), "queue.owner-stopped q=orders epoch=2 next=3", "S U U"},
	{NewQueueClaim("orders", 2), "queue.claim q=orders epoch=2", "S U"},
	{NewQueueHandoffStarted("orders", 2, 3, 4), "queue.handoff-started q=orders epoch=2 next=3 leases=4", "S U U I"},
	{NewQueueHandoffProposed("orders", 2, 3, 0), "queue.handoff-proposed q=orders epoch=2 next=3 leases=0", "S U U I"},
	{NewQueueHandoffAborted("orders", 2, 3, "no leader"), "queue.handoff-aborted q=orders epoch=2 next=3 why=no leader", "S U U S"},
	{NewQueueRetired("orders", 5), "queue.retired q=orders inc=5", "S U"},
	{NewQueueDropFailed("orders", errSample), "queue.drop-failed q=orders err=disk on fire", "S S"},
	{NewQueueReplaced("orders", 5), "queue.replaced q=orders inc=5", "S U"},
	{NewRecoveryStart("orders", 2, 1), "recovery.start q=orders epoch=2 attempt=1", "S U I"},
	{NewRecoveryStageSealed(stage, 3, 2, 9, 1), "recovery.stage q=orders epoch=2 stage=seal outcome=ok us=1500 witnesses=3 source=n2 source-last=9 source-epoch=1", "S U S S I I S U U"},
	{NewRecoveryStageFetched(stage, 640), "recovery.stage q=orders epoch=2 stage=seal outcome=ok us=1500 bytes=640", "S U S S I I"},
	{NewRecoveryStageInstalled(stage, 10), "recovery.stage q=orders epoch=2 stage=seal outcome=ok us=1500 marker=10", "S U S S I U"},
	{NewRecoveryStageRetry(stage, "a witness left"), "recovery.stage q=orders epoch=2 stage=seal outcome=retry us=1500 why=a witness left", "S U S S I S"},
	{NewRecoveryForeignHistory("orders", 3), "recovery.foreign-history q=orders from=n3", "S S"},
	{NewRecoveryLostWitness("orders", 3), "recovery.lost-witness q=orders from=n3", "S S"},
	{NewRecoveryUnsupported("orders", 2, 9, 7, 3, 2), "recovery.unsupported q=orders epoch=2 confirmed=9 best=7 best-node=n3 witnesses=2", "S U U U S I"},
	{NewRecoveryContradiction("orders", 9, "ab12", "cd34"), "recovery.contradiction q=orders last=9 digest=ab12 witnessed=cd34", "S U S S"},
	{NewRecoveryActivateFailed("orders", "not leader"), "recovery.activate-failed q=orders why=not leader", "S S"},
	{NewRecoveryDone(Recovery{Queue: "orders", Epoch: 2, Took: 2 * time.Millisecond, RPCs: 6, Bytes: 640, Syncs: 2, Attempt: 1}),
		"recovery.done q=orders epoch=2 us=2000 rpcs=6 bytes=640 syncs=2 attempt=1", "S U I I I U I"},
	{NewRecoveryAbandoned("orders", 2, "deleted"), "recovery.abandoned q=orders epoch=2 why=deleted", "S U S"},
	{NewRecoverySourceReadFailed("orders", errSample), "recovery.source-read-failed q=orders err=disk on fire", "S S"},
	{NewMetaLeader(4, 2), "meta.leader term=4 node=2", "U U"},
	{NewMetaSnapshotInstalled(30), "meta.snapshot-installed index=30", "U"},
	{NewMetaCatchingUp("rejoined"), "meta.catching-up why=rejoined", "S"},
	{NewMetaCaughtUp(31), "meta.caught-up commit=31", "U"},
	{NewMetaCampaign("leader silent", 5), "meta.campaign why=leader silent term=5", "S U"},
	{NewMetaBadMessage(3), "meta.bad-message from=n3", "S"},
	{NewMetaCommitLearned(1, 74), "meta.commit-learned from=n1 commit=74", "S U"},
	{NewMetaFollowerLostLog(3, 10, 12, 2), "meta.follower-lost-log node=n3 last=10 counted=12 transfer-to=2", "S U U U"},
	{NewMetaActivated("orders", 5), "meta.activated q=orders inc=5", "S U"},
	{NewMetaDeleted("orders", 5), "meta.deleted q=orders inc=5", "S U"},
	{NewMetaRecoveryActivated("orders", 5, 2, []uint32{1, 3}), "meta.recovery-activated q=orders inc=5 epoch=2 members=1,3", "S U U S"},
	{NewMetaReplicaReplaced("orders", 3, []uint32{2, 3, 4}), "meta.replica-replaced q=orders epoch=3 replicas=2,3,4", "S U S"},
	{NewMetaProposalFailed("orders", 4, "timed out"), "meta.proposal-failed q=orders kind=4 why=timed out", "S I S"},
	{NewMetaMembership("promote", 4, []uint32{1, 2, 4}, []uint32{5}, 3), "meta.membership kind=promote node=4 voters=1,2,4 learners=5 largest-set=3", "S U S S I"},
	{NewMetaMembershipRefused("remove", 2, "holds replicas"), "meta.membership-refused kind=remove node=2 why=holds replicas", "S U S"},
	{NewMetaRebalance(true), "meta.rebalance outcome=started", "S"},
	{NewMetaPlanReplace("orders", 1, 4, 3), "meta.plan-replace q=orders out=1 in=4 epoch=3", "S U U U"},
	{NewMetaPlanRecovery("orders", 1, 2, 3), "meta.plan-recovery q=orders from=1 to=2 epoch=3", "S U U U"},
	{NewMetaNodeDown(1), "meta.node-down node=1", "U"},
	{NewMetaNodeUp(1), "meta.node-up node=1", "U"},
	{NewMetaDetection(2, 100*time.Millisecond, 1500*time.Millisecond), "meta.detection mode=2 interval=100ms grace=1.5s", "I D D"},
	{NewDetectSuspect(2, 410*time.Millisecond), "detect.suspect node=2 silent-ms=410", "U U"},
	{NewDetectConfirm(2), "detect.confirm node=2", "U"},
	{NewDetectRecovered(2, true), "detect.recovered node=2 was-confirmed=true", "U B"},
	{NewDetectReset(2), "detect.reset node=2", "U"},
	{NewDetectRefused(2), "detect.refused node=2", "U"},
	{NewDetectVouched(2, 3), "detect.vouched node=2 from=3", "U U"},
	{NewDetectFlapped(2, 3), "detect.flapped node=2 flaps=3", "U I"},
	{NewDetectLeaderLost(1), "detect.leader-lost node=1", "U"},
	{NewNodeStarted(3), "node.started queues=3", "I"},
	{NewNodeStrayDirectory("junk"), "node.stray-directory name=junk", "S"},
	{NewNodeUnexpectedMessage("Publish", 2), "node.unexpected-message kind=Publish from=n2", "S S"},
	{NewNodeUnexpectedRequest("Append"), "node.unexpected-request kind=Append", "S"},
	{NewNodeStamped("east"), "node.stamped cluster=east", "S"},
	{NewNodeDiskFull(4096, -1, "past the quota"), "node.disk-full bytes=4096 free=-1 why=past the quota", "I I S"},
	{NewNodeDiskOK(1024, 9000), "node.disk-ok bytes=1024 free=9000", "I I"},
	{NewCounterOpen(12, "ef56"), "counter.open last=12 digest=ef56", "U S"},
	{NewCounterFenced(errSample), "counter.fenced err=disk on fire", "S"},
	{NewCounterAcked(11), "counter.acked durable=11", "U"},
	{NewCounterConfirmed(10), "counter.confirmed index=10", "U"},
	{NewCounterDisconnect(3), "counter.disconnect peer=n3", "S"},
}

// kinds renders an event's value kinds, one letter each.
func kinds(e Event) string {
	letters := map[slog.Kind]string{
		slog.KindString: "S", slog.KindUint64: "U", slog.KindInt64: "I", slog.KindDuration: "D", slog.KindBool: "B",
	}
	var out []string
	for _, a := range e.Attrs {
		out = append(out, letters[a.Value.Kind()])
	}
	return strings.Join(out, " ")
}

// Every constructor renders its trace line, with its value kinds, exactly
// as the node emitted it before this package existed.
func TestConstructorsRenderTheTraceFormat(t *testing.T) {
	for _, s := range samples {
		if got := s.e.String(); got != s.text {
			t.Errorf("rendered %q, want %q", got, s.text)
		}
		if got := kinds(s.e); got != s.kinds {
			t.Errorf("%s: kinds %q, want %q", s.e.Name, got, s.kinds)
		}
	}
}

// The samples cover every name, so the test above pins every event.
func TestSamplesCoverEveryName(t *testing.T) {
	var covered []Name
	for _, s := range samples {
		covered = append(covered, s.e.Name)
	}
	for _, n := range Names() {
		if !slices.Contains(covered, n) {
			t.Errorf("no sample of %s", n)
		}
	}
}

// Names lists every Name constant of names.go once, and each looks like
// the family.kind names the literal lint at the repository root hunts.
func TestNamesListsEveryConstant(t *testing.T) {
	declared := declaredNames(t)
	listed := Names()
	for _, n := range declared {
		if !slices.Contains(listed, n) {
			t.Errorf("%s is declared but not listed in names", n)
		}
	}
	shape := regexp.MustCompile(`^[a-z]+\.[a-z-]+$`)
	for i, n := range listed {
		if slices.Contains(listed[:i], n) {
			t.Errorf("%s is listed twice", n)
		}
		if !shape.MatchString(string(n)) {
			t.Errorf("%s does not look like family.kind", n)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("%d names listed, %d declared", len(listed), len(declared))
	}
}

// declaredNames parses names.go for the constants of type Name.
func declaredNames(t *testing.T) []Name {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []Name
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Name" {
				continue
			}
			for i := range vs.Names {
				lit := vs.Values[i].(*ast.BasicLit)
				out = append(out, Name(strings.Trim(lit.Value, `"`)))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no Name constants in names.go")
	}
	return out
}

// NodeName renders as node.NodeID's String does; node's own test holds
// the two together.
func TestNodeNameMatchesTheNodeRendering(t *testing.T) {
	if got := NodeName(12); got != "n12" {
		t.Fatalf("NodeName(12) = %q, want n12", got)
	}
}

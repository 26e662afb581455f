package recovery

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// Stage is where an attempt is.
type Stage int

// The stages of an attempt, in order.
const (
	StageSeal    Stage = iota // sealing replicas and collecting witnesses
	StageFetch                // copying the chosen source's history
	StageInstall              // replicating the recovered history under the new epoch
)

var stageNames = [...]string{"seal", "fetch", "install"}

// String names the stage as the recovery.stage event reports it.
func (s Stage) String() string { return stageNames[s] }

// Config is what an attempt is about, fixed when it starts.
type Config struct {
	Self        uint32 // this node: the candidate
	Queue       string
	Incarnation uint64
	Epoch       uint64 // the epoch the plan gave this candidate
	// Attempt numbers the attempt within its epoch, from 1.
	Attempt int
	// SealSet is the replica set whose witnesses count toward the seal
	// quorum: the set before a pending replacement, else the current one.
	// A replacement holds nothing, so its witness proves nothing.
	SealSet []uint32
	// HistoryID is the queue history this replica belongs to; a witness
	// of another history is foreign.
	HistoryID uint64
	// DeliveryLease is how long the old owner may go on delivering after
	// the last quorum answer it got.
	DeliveryLease time.Duration
	// SilenceLimit is how long an owner may go on serving after the send
	// stamp of the last appends a quorum of its replicas accepted
	// (Core.ServeFrom).
	SilenceLimit time.Duration
	// Now is when the attempt starts; SyncBatches is how many group
	// commits the log had made by then.
	Now         time.Time
	SyncBatches uint64
}

// Witness is what a sealed replica reported holding.
type Witness struct {
	Node        uint32
	First, Last uint64
	LastEpoch   uint64
	Digest      storage.Digest
	HistoryID   uint64
	Process     uint64
	// Suspect says the replica restarted over its storage and has not
	// been verified since: its disk may have lost what it reported.
	Suspect bool
	// Commit is the highest index the replica knows was confirmed.
	Commit uint64
	// LeaseGrantAgo is how long before its witness, on its own lease
	// clock, the replica last let an older owner renew its delivery lease
	// (or stopped delivering as that owner).
	LeaseGrantAgo uint64
}

// Follower is how far one other replica of the current set holds this
// candidate's log durably (the lower of what it matched and what it
// reported durable).
type Follower struct {
	Node uint32
	Held uint64
}

// Facts is what the driver knows at the moment of an input: the clocks,
// this replica's own log, what the metadata says of the queue, and how
// far the followers hold the log. The driver reads it fresh for each
// input; the core keeps none of its slices.
type Facts struct {
	Now time.Time
	// LeaseClock is the node's monotonic clock as appends stamp it.
	LeaseClock uint64
	// Self is this replica's witness as it is now.
	Self Witness
	// Policy is the queue's confirmation policy as the metadata has it;
	// Lost lists the replicas the metadata holds lost to damage.
	Policy wire.Policy
	Lost   []uint32
	// Members is the current replica set, in the metadata's order.
	Members []uint32
	// Durable is the last index of this replica's log known durable.
	Durable uint64
	// Followers lists the other members, in Members order.
	Followers []Follower
	// SyncBatches counts the group commits this replica's log made.
	SyncBatches uint64
}

// Input is something that happened to the attempt; Core.Step takes it.
type Input interface{ input() }

// Sealed says this replica's own seal (its epoch and its log) is durable.
type Sealed struct{ Facts }

// SealReply is another replica's answer to a seal.
type SealReply struct {
	Facts
	From uint32
	Msg  *wire.SealReply
}

// FetchReply is the source's answer to a fetch.
type FetchReply struct {
	Facts
	From uint32
	Msg  *wire.FetchReply
}

// CheckpointOffered is the source's checkpoint, sent in place of a page
// because the source no longer holds the records after this replica's
// end.
type CheckpointOffered struct {
	Facts
	From uint32
	Msg  *wire.Checkpoint
}

// ChunkReceived says a chunk of a checkpoint the source is sending
// arrived; the whole checkpoint comes as CheckpointOffered.
type ChunkReceived struct {
	Facts
	From uint32
}

// Truncated says the driver carried out a Truncate.
type Truncated struct{ Facts }

// PageAppended says the driver carried out an AppendPage, or why it
// could not.
type PageAppended struct {
	Facts
	Err error
}

// Installed says the driver carried out an Install: Marker is the index
// of the epoch marker it appended, or 0 if the append failed.
type Installed struct {
	Facts
	Marker uint64
}

// Progress says the log's durable index or a follower's position moved.
type Progress struct{ Facts }

// ActivationResult is the metadata's answer to a ProposeActivation.
type ActivationResult struct {
	OK     bool
	Detail string
}

// Activated says the metadata activated this owner in the attempt's
// epoch; Policy is the queue's policy as it committed it.
type Activated struct {
	Facts
	Policy wire.Policy
}

// Tick is one owner tick.
type Tick struct{ Facts }

// Stop says the owner side stopped (it went stale or follows another
// owner), and why.
type Stop struct{ Why string }

func (Sealed) input()            {}
func (SealReply) input()         {}
func (FetchReply) input()        {}
func (CheckpointOffered) input() {}
func (ChunkReceived) input()     {}
func (Truncated) input()         {}
func (PageAppended) input()      {}
func (Installed) input()         {}
func (Progress) input()          {}
func (ActivationResult) input()  {}
func (Activated) input()         {}
func (Tick) input()              {}
func (Stop) input()              {}

// Action is one thing the driver must do. Actions that the core needs
// answered (Truncate, AppendPage, Install, ProposeActivation, SealSelf)
// name the input that answers them; an action list never holds anything
// after Truncate, AppendPage, Install, ProposeActivation, Restart, Abandon
// or Stale.
type Action interface {
	action()
	String() string
}

// Emit reports an event.
type Emit struct{ Event event.Event }

// Send sends a message to a replica.
type Send struct {
	To  uint32
	Msg wire.Message
}

// SealSelf seals this replica at Epoch: the driver makes the epoch and
// the log durable, then answers with Sealed.
type SealSelf struct{ Epoch uint64 }

// Truncate drops this log's entries after After; the driver answers with
// Truncated (or, if the log failed, with nothing: the process halts).
type Truncate struct{ After uint64 }

// AppendPage appends a page of the source's history after index Prev,
// in the attempt's Epoch; the driver answers with PageAppended.
type AppendPage struct {
	Prev    uint64
	Epoch   uint64
	Entries []wire.Entry
}

// TakeCheckpoint makes the source's checkpoint this replica's and resets
// its log to go on after the cut; the driver answers with PageAppended.
type TakeCheckpoint struct {
	From uint32
	Msg  *wire.Checkpoint
}

// Install rebuilds the served state from this log, appends the epoch
// marker and replicates; the driver answers with Installed (or, if the
// log cannot be read, fences or halts the replica).
type Install struct{}

// ProposeActivation asks the metadata to activate this owner with
// Members as the exact quorum holding the marker; the driver answers with
// ActivationResult.
type ProposeActivation struct{ Members []uint32 }

// Activate makes this replica the owner: everything up to Marker is
// confirmed, and its history, selected from a seal, is trusted. The old
// owner may still be delivering the messages of that history until its
// delivery lease runs out, so the new owner holds them back until
// HoldUntil on the lease clock; what is published in the new epoch can
// be delivered at once. Until ServeFrom an older owner may even still
// serve on its quorum (Core.ServeFrom): the new owner admits publishes,
// which it alone can confirm, but delivers and settles nothing before
// then. Early is set only by the planted bug admit-before-install-quorum:
// the owner is made before its activation was proposed, so the driver
// keeps the attempt running to propose it.
type Activate struct {
	Marker    uint64
	Policy    wire.Policy
	HoldUntil uint64
	ServeFrom uint64
	Early     bool
}

// Admit starts serving clients in the new epoch.
type Admit struct{}

// Restart ends the attempt; the driver starts attempt number Attempt
// from sealing if the metadata still holds the plan.
type Restart struct {
	Attempt int
	Why     string
}

// Abandon ends the attempt for good.
type Abandon struct{ Why string }

// Stale ends the attempt because a replica holds a newer epoch, whose
// owner is Owner if known: this candidate goes stale.
type Stale struct {
	Owner uint32
	Why   string
}

func (Emit) action()              {}
func (Send) action()              {}
func (SealSelf) action()          {}
func (Truncate) action()          {}
func (AppendPage) action()        {}
func (TakeCheckpoint) action()    {}
func (Install) action()           {}
func (ProposeActivation) action() {}
func (Activate) action()          {}
func (Admit) action()             {}
func (Restart) action()           {}
func (Abandon) action()           {}
func (Stale) action()             {}

func (a Emit) String() string     { return "emit " + a.Event.String() }
func (a SealSelf) String() string { return fmt.Sprintf("seal-self epoch=%d", a.Epoch) }
func (a Truncate) String() string { return fmt.Sprintf("truncate after=%d", a.After) }
func (a AppendPage) String() string {
	return fmt.Sprintf("append-page prev=%d epoch=%d entries=%d", a.Prev, a.Epoch, len(a.Entries))
}
func (a TakeCheckpoint) String() string {
	return fmt.Sprintf("take-checkpoint from=n%d cut=%d", a.From, a.Msg.Cut)
}
func (Install) String() string { return "install" }
func (a ProposeActivation) String() string {
	return "propose-activation members=" + nodeList(a.Members)
}
func (a Activate) String() string {
	s := fmt.Sprintf("activate marker=%d policy=%s hold-until=%v", a.Marker, a.Policy, time.Duration(a.HoldUntil))
	if a.Early {
		s += " early"
	}
	return s
}
func (Admit) String() string     { return "admit" }
func (a Restart) String() string { return fmt.Sprintf("restart attempt=%d why=%q", a.Attempt, a.Why) }
func (a Abandon) String() string { return fmt.Sprintf("abandon why=%q", a.Why) }
func (a Stale) String() string   { return fmt.Sprintf("stale owner=n%d why=%q", a.Owner, a.Why) }

// String renders the message's recovery fields; other messages by kind.
func (a Send) String() string {
	switch m := a.Msg.(type) {
	case *wire.Seal:
		return fmt.Sprintf("send n%d seal q=%s inc=%d epoch=%d", a.To, m.Queue, m.Incarnation, m.Epoch)
	case *wire.Fetch:
		return fmt.Sprintf("send n%d fetch q=%s inc=%d epoch=%d prev=%d prev-epoch=%d", a.To, m.Queue, m.Incarnation, m.Epoch, m.PrevIndex, m.PrevEpoch)
	}
	return fmt.Sprintf("send n%d %T", a.To, a.Msg)
}

func nodeList(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("n%d", id)
	}
	return strings.Join(s, ",")
}

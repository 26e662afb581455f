package event

import (
	"log/slog"
	"time"
)

// The constructors of an owner recovery's events.

// NewRecoveryStart reports that attempt (from 1) of recovering q into
// epoch began.
func NewRecoveryStart(q string, epoch uint64, attempt int) Event {
	return newEvent(RecoveryStart, str(KeyQueue, q), u64(KeyEpoch, epoch), num(KeyAttempt, attempt))
}

// StageEnd is what every recovery.stage event reports, whichever stage
// ended and however: the constructors below add what is particular to
// each.
type StageEnd struct {
	Queue string
	Epoch uint64
	// Stage is the stage's name: seal, fetch or install.
	Stage string
	// Took is how long the stage ran; the event carries it in whole
	// microseconds.
	Took time.Duration
}

// attrs renders the common part of a stage's event, ending with how the
// stage ended.
func (s StageEnd) attrs(outcome string, more ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{
		str(KeyQueue, s.Queue), u64(KeyEpoch, s.Epoch), str(KeyStage, s.Stage), str(KeyOutcome, outcome),
		slog.Int64(string(KeyElapsed), s.Took.Microseconds()),
	}, more...)
}

// NewRecoveryStageSealed reports that the seal stage ended well: witnesses
// replicas answered, and source, whose log ends at sourceLast in
// sourceEpoch, holds the history to recover.
func NewRecoveryStageSealed(s StageEnd, witnesses int, source uint32, sourceLast, sourceEpoch uint64) Event {
	return newEvent(RecoveryStage, s.attrs("ok",
		num(KeyWitnesses, witnesses), nodeStr(KeySource, source), u64(KeySourceLast, sourceLast), u64(KeySourceEpoch, sourceEpoch))...)
}

// NewRecoveryStageFetched reports that the fetch stage ended well, having
// copied bytes of payload.
func NewRecoveryStageFetched(s StageEnd, bytes int) Event {
	return newEvent(RecoveryStage, s.attrs("ok", num(KeyBytes, bytes))...)
}

// NewRecoveryStageInstalled reports that the install stage ended well:
// the metadata activated the recovered owner, whose epoch begins with the
// marker entry at index marker.
func NewRecoveryStageInstalled(s StageEnd, marker uint64) Event {
	return newEvent(RecoveryStage, s.attrs("ok", u64(KeyMarker, marker))...)
}

// NewRecoveryStageRetry reports that a stage ended in a retry of the
// whole attempt, and why.
func NewRecoveryStageRetry(s StageEnd, why string) Event {
	return newEvent(RecoveryStage, s.attrs("retry", str(KeyWhy, why))...)
}

// NewRecoveryForeignHistory reports that witness from answered q's seal
// with another incarnation's history, which is no evidence.
func NewRecoveryForeignHistory(q string, from uint32) Event {
	return newEvent(RecoveryForeignHistory, str(KeyQueue, q), nodeStr(KeyFrom, from))
}

// NewRecoveryLostWitness reports that witness from answered q's seal
// although the metadata lists its replica as lost, which is no evidence.
func NewRecoveryLostWitness(q string, from uint32) Event {
	return newEvent(RecoveryLostWitness, str(KeyQueue, q), nodeStr(KeyFrom, from))
}

// NewRecoveryUnsupported reports that recovering q into epoch cannot go
// on: the recovery knows records through confirmed are confirmed, but the
// longest log among its witnesses, bestNode's, ends at best.
func NewRecoveryUnsupported(q string, epoch, confirmed, best uint64, bestNode uint32, witnesses int) Event {
	return newEvent(RecoveryUnsupported, str(KeyQueue, q), u64(KeyEpoch, epoch), u64(KeyConfirmed, confirmed),
		u64(KeyBest, best), nodeStr(KeyBestNode, bestNode), num(KeyWitnesses, witnesses))
}

// NewRecoveryContradiction reports that q's history copied through last
// has digest, where the source's witness reported witnessed.
func NewRecoveryContradiction(q string, last uint64, digest, witnessed string) Event {
	return newEvent(RecoveryContradiction, str(KeyQueue, q), u64(KeyLast, last), str(KeyDigest, digest), str(KeyWitnessed, witnessed))
}

// NewRecoveryActivateFailed reports that the metadata did not activate
// q's recovered owner, and why.
func NewRecoveryActivateFailed(q, why string) Event {
	return newEvent(RecoveryActivateFailed, str(KeyQueue, q), str(KeyWhy, why))
}

// Recovery is what a completed recovery reports.
type Recovery struct {
	Queue string
	Epoch uint64
	// Took is how long the attempt ran; the event carries it in whole
	// microseconds.
	Took time.Duration
	// RPCs, Bytes and Syncs count the requests sent, payload bytes
	// copied and group commits of the log since the attempt began.
	RPCs, Bytes int
	Syncs       uint64
	// Attempt is the attempt's number, from 1.
	Attempt int
}

// NewRecoveryDone reports a completed recovery. It takes a struct since
// its counts are easy to swap by position.
func NewRecoveryDone(r Recovery) Event {
	return newEvent(RecoveryDone, str(KeyQueue, r.Queue), u64(KeyEpoch, r.Epoch),
		slog.Int64(string(KeyElapsed), r.Took.Microseconds()), num(KeyRPCs, r.RPCs), num(KeyBytes, r.Bytes),
		u64(KeySyncs, r.Syncs), num(KeyAttempt, r.Attempt))
}

// NewRecoveryAbandoned reports that the attempt to recover q into epoch
// gave up, and why.
func NewRecoveryAbandoned(q string, epoch uint64, why string) Event {
	return newEvent(RecoveryAbandoned, str(KeyQueue, q), u64(KeyEpoch, epoch), str(KeyWhy, why))
}

// NewRecoverySourceReadFailed reports that this replica of q, asked for
// history by a recovery, could not read its log.
func NewRecoverySourceReadFailed(q string, err error) Event {
	return newEvent(RecoverySourceReadFailed, str(KeyQueue, q), errStr(KeyErr, err))
}

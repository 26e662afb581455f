package node

import (
	"fmt"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/storage"
)

// Rolling the base of the next checkpoint build forward. A build applies
// every record since the previous cut in the handler that starts it (a
// step of up to thousands of records), and every replica of the queue
// builds at the same moment, when the owner asks: in cairn-bench handoff
// (1,000 msg/s, a cut about every second) each replica stood still for
// 7-20 ms applying some 2,000 records, the owner and both followers at
// once, and no publish was confirmed meanwhile. So between builds each
// replica applies, once a tick, what was confirmed since the last tick to
// the state it keeps for the next build: a build then applies the few
// records since the last tick, and a new owner's rebuild at failover or
// handoff starts from a state at most a tick behind.
//
// The base rolls only to the known commit (and what is durable here): no
// record at or below it is ever dropped, so the base never holds a record
// the log loses. An owner asks for a cut at its own commit index, at or
// past any commit it told a follower before, so a base is almost never
// past the cut asked for; when it is (an ask delayed behind later
// appends), the build decodes its base from the checkpoint instead.

// fillStepEntries is how many window entries a tick puts into the ID maps
// of a base copied for a new owner (stateclone.go). A new owner builds
// no checkpoint until they are whole, and in cairn-bench history, whose
// owner failed every 3 s with a window of 2,400,000 entries, 8,192 a
// tick (about 6 s to fill) meant no owner ever reported its own receipt
// and no cut was certified after the first failovers. Since 1b4b218 a
// step of 8,192 takes 0.34 ms (1.7 ms before, with one map of every ID;
// `go test -run '^$' -bench FillMapsStep ./node`), so a step of 65,536
// fills that window in under 40 ticks, at about 3 ms a tick.
const fillStepEntries = 65536

// rollBase applies to the kept base what was confirmed since it was last
// rolled, at most a build step's worth of records or bytes. It rolls
// while the last build's window and file are written too: the journal
// writes a copy of the window at the cut (journalJob), and the file's
// state was encoded when the build finished. With no base
// kept it starts one only from an empty state (a log that starts at its
// first record and no checkpoint yet): decoding a checkpoint here would
// stall the node as long as a build's decode does.
func (r *replica) rollBase() {
	if r.n.cfg.CheckpointRecords < 0 || !r.present() {
		return
	}
	target := min(r.commitKnown, r.log.DurableIndex())
	if bugs.Active(bugs.RollPastCommit) {
		target = r.log.DurableIndex() // planted: records a newer owner may replace
	}
	// The log's growth is measured every tick, also while the base waits
	// (for a build, or at a cut asked for), so that a step is sized by
	// what one tick brought. Measured from the last roll instead, a base
	// released after a build took twice all it had missed in one step:
	// at 17,000 msg/s every replica stood still 30-58 ms after each
	// build, all three at once, and pipelined publishes waited up to
	// 400 ms. What it missed is caught up by the quarter share.
	grown := target - min(r.rollSeen, target)
	r.rollSeen = target
	if r.build != nil || r.installing {
		return
	}
	if want := r.ckptWant; want > max(r.ckpt.cut, r.ckptBuilt) {
		// A cut asked for while the last build is still being written
		// waits for it: a base rolled past that cut cannot be built from,
		// and the build would decode the checkpoint instead, a stall as
		// long as the window is big.
		target = min(target, want)
	}
	s := r.ckptState
	if s == nil {
		if r.ckpt.cut != 0 || r.log.FirstIndex() > 1 || target == 0 {
			return
		}
		s = newQueueState(r.name)
		s.keepSum = true
		r.ckptState, r.ckptStateDigest = s, r.log.BaseDigest()
	}
	if s.filling {
		// The maps of a copied base are filled first, a step a tick. A
		// cut asked for meanwhile waited for them (buildCheckpoint):
		// with no more appends, nothing else would start its build,
		// which takes the base over.
		if !s.fillMaps(fillStepEntries) {
			return
		}
		if r.buildCheckpoint(); r.build != nil {
			return
		}
	}
	if s.applied >= target {
		return
	}
	if s.sumStale {
		panic(fmt.Sprintf("node: queue %s base at %d lost track of its window digest", r.name, s.applied))
	}
	s.keepSum = true // a decoded base's digest is whole; keep it so as it rolls
	records := rollStepRecords(grown, target-s.applied)
	if r.rollFromTail(s, target, records) > 0 {
		return // records past the tail's last batch end wait for the next roll
	}
	rd := r.log.NewReader(s.applied + 1)
	defer rd.Close()
	bytes := records * buildStepBytesPerRecord
	for records > 0 && bytes > 0 && s.applied < target {
		page, err := rd.Next(target, records, bytes)
		if err == nil && len(page) == 0 {
			err = fmt.Errorf("%w: queue %s log ends at %d, before its known commit %d", storage.ErrCorrupt, r.name, r.log.LastIndex(), target)
		}
		if err != nil {
			r.ckptState = nil
			r.readFailed(err)
			return
		}
		if err := r.rollPage(s, page); err != nil {
			r.ckptState = nil
			r.readFailed(err)
			return
		}
		r.rolled.fromLog += uint64(len(page))
		records, bytes = records-len(page), bytes-pageBodyBytes(page)
	}
}

// rollStepRecords is how many records a roll applies when the log grew
// by grown since the last tick and the base is behind records short of
// its target. As a build's steps do, it applies twice what was confirmed
// since the last tick, so a base gains on the log without one long
// stall; and at least a quarter of what it lacks, within the build
// step's bounds. Without that share, a base far behind gained
// buildStepRecordsMin a tick: in cairn-bench history, a node restarted
// over a checkpoint 89,000 records behind its log was chosen owner 1.7 s
// later with a base still 24,000 records short, and rebuilt them in 7
// steps, 162 ms of its recovery's install stage.
func rollStepRecords(grown, behind uint64) int {
	return int(min(max(buildStepRecordsMin, 2*grown, behind/4), buildStepRecordsMax))
}

// rollPage applies one page of records to the base s and moves its digest
// past them: taken from the log when it still remembers the digest after
// the page's last record, hashed record by record otherwise.
func (r *replica) rollPage(s *queueState, page []storage.Record) error {
	digest, known := r.log.DigestAt(page[len(page)-1].Index)
	hash := &r.ckptStateDigest
	if known {
		hash = nil
	}
	if err := applyPage(r.name, s, page, hash); err != nil {
		return err
	}
	if known {
		r.ckptStateDigest = digest
	}
	return nil
}

// servingBase is the state a serving owner starts from, the log after it
// still to apply (a recovered or restarted owner's): a copy of the base
// kept for the next build, at the checkpoint's cut or rolled past it
// (ckptroll.go), when there is one, or else the checkpoint decoded. The
// kept base spares a new owner decoding a window of up to hundreds of
// thousands of IDs while clients wait for it to serve, and a copy of it
// stays the base of the owner's next build, which would otherwise decode
// the checkpoint in the middle of serving (stateclone.go). The serving
// state stops keeping the window's digest, which it never encodes.
func (r *replica) servingBase() (*queueState, string, error) {
	r.adoptBuildState()
	if s := r.ckptState; s != nil && s.applied >= r.ckpt.cut && s.applied <= r.log.LastIndex() {
		s.fillMaps(-1) // a base copied lately is whole before it is copied again
		r.ckptState = s.clone()
		s.keepSum = false
		return s, baseMemory, nil
	}
	s, err := r.baseState()
	if r.ckpt.cut == 0 {
		return s, baseEmpty, err
	}
	return s, baseDecoded, err
}

// adoptBuildState drops a build under way and makes its state the base
// again: a build holds the base while it runs, and a new owner chosen
// meanwhile would decode its checkpoint instead, in the handler that
// installs it (2.4 s for a window of 1,000,000 IDs, in cairn-bench
// history, long enough for the metadata to give up on the candidate).
// The build's replay is finished first: until it reaches the cut, its
// digest is the log's at the cut unless it hashes the records it applies.
// The cut is built anew at the next durable or commit news.
func (r *replica) adoptBuildState() {
	b := r.build
	if r.ckptState != nil || b == nil {
		return
	}
	for b.rd.Position() <= b.cut {
		page, err := b.rd.Next(b.cut, pageRecords, pageBytes)
		var digest *storage.Digest
		if b.hashed {
			digest = &b.digest
		}
		if err == nil && len(page) > 0 {
			err = applyPage(r.name, b.state, page, digest)
		}
		if err != nil || len(page) == 0 {
			r.abortBuild() // the decode that follows meets the same log and reports it
			return
		}
	}
	s, digest := b.state, b.digest
	r.abortBuild()
	r.ckptState, r.ckptStateDigest = s, digest
}

// Where a served state began, as queue.rebuilt reports it.
const (
	baseMemory  = "memory"
	baseDecoded = "decoded"
	baseEmpty   = "empty"
)

package node

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
)

// Rebuilding the state a recovered owner serves from. The state is the
// checkpoint's plus every record after it; a long suffix would hold up
// the event loop for as long as it takes to apply, and a node that stops
// answering heartbeats that long is suspected and replaced while it
// rebuilds, over and over. So the rebuild applies at most
// pageRecords records (or pageBytes of them) at a
// time: one step now, and each next one from a timer of no delay, so
// that whatever arrived meanwhile (heartbeats, raft, clients) is handled
// between two steps without the rebuild waiting for a tick.

// timerRebuild runs the next step of every rebuild under way.
const timerRebuild TimerKind = 4

// stateRebuild is a rebuild under way: the state so far, the reader at the
// next record, the last index to apply, and what to do with the result.
type stateRebuild struct {
	state *queueState
	rd    *storage.Reader
	from  uint64 // the index its base state was at
	last  uint64
	steps int
	base  string // where the state began (servingBase)
	done  func(*queueState, error)
}

// rebuildState starts rebuilding the state at the log's last index and
// calls done with it once every record is applied, or with the error that
// stopped it. The log must not change meanwhile: a candidate installing
// its recovered history appends nothing until the state is built. Any
// rebuild already under way is dropped.
func (o *ownerState) rebuildState(done func(*queueState, error)) {
	r := o.r
	o.abortRebuild()
	o.built = false // until the new state is whole
	state, base, err := r.servingBase()
	if err != nil {
		done(nil, err)
		return
	}
	o.rebuild = &stateRebuild{state: state, rd: r.log.NewReader(state.applied + 1), from: state.applied, last: r.log.LastIndex(), base: base, done: done}
	o.stepRebuild()
}

// stepRebuild applies the next records of the rebuild, and hands over the
// state once it reaches the last index.
func (o *ownerState) stepRebuild() {
	b := o.rebuild
	if b == nil {
		return
	}
	var err error
	b.steps++
	if b.state.applied < b.last {
		var page []storage.Record
		if page, err = b.rd.Next(b.last, pageRecords, pageBytes); err == nil && len(page) == 0 {
			err = fmt.Errorf("%w: queue %s log ends at %d, before %d", storage.ErrCorrupt, o.r.name, b.state.applied, b.last)
		}
		if err == nil {
			err = applyPage(o.r.name, b.state, page, nil)
		}
		if err == nil && b.state.applied < b.last {
			o.r.n.scheduleRebuild()
			return
		}
	}
	o.abortRebuild()
	if err != nil {
		b.done(nil, err)
		return
	}
	o.r.n.emit(event.NewQueueRebuilt(o.r.name, b.from, b.last, b.steps, b.base))
	b.done(b.state, nil)
}

// scheduleRebuild asks for the next step of the rebuilds under way, once.
func (n *Node) scheduleRebuild() {
	if !n.rebuildScheduled {
		n.rebuildScheduled = true
		n.env.After(0, Timer{Kind: timerRebuild})
	}
}

// onRebuildTimer takes the next step of every rebuild under way.
func (n *Node) onRebuildTimer() {
	n.rebuildScheduled = false
	for _, name := range n.names {
		if r := n.queues[name]; r.own != nil {
			r.own.stepRebuild()
		}
	}
}

// abortRebuild drops the rebuild under way, if any, without calling its
// continuation.
func (o *ownerState) abortRebuild() {
	if o.rebuild != nil {
		o.rebuild.rd.Close()
		o.rebuild = nil
	}
}

package node

import (
	"container/heap"
	"fmt"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// readyKey orders ready messages: first by the log index of the event
// that made the message ready (its own publish, or the promote record that
// released it from its delay), then by its publish index. Replaying a log
// therefore rebuilds the same order.
type readyKey struct {
	at    uint64
	index uint64
}

func (k readyKey) less(o readyKey) bool {
	if k.at != o.at {
		return k.at < o.at
	}
	return k.index < o.index
}

// message is an unsettled message in a queue's applied state.
type message struct {
	id      wire.MessageID
	index   uint64 // index of its publish record
	payload []byte
	readyAt int64 // Unix nanoseconds; 0 for an immediate message
	delayed bool  // waiting for a promote record
	key     readyKey
	// inHeap says the message sits in the ready heap. Leasing takes it
	// out; nack and lease expiry put it back.
	inHeap   bool
	lease    *lease
	attempts uint32
}

// queueState is the deterministic state a queue's log applies to. Every
// replica that applies the same records reaches the same state; the
// owner-local parts (leases, subscriptions) live elsewhere.
type queueState struct {
	name      string
	created   bool
	deleted   bool
	policy    wire.Policy
	members   []NodeID
	applied   uint64
	messages  map[wire.MessageID]*message // unsettled
	published map[wire.MessageID]uint64   // every ID ever published: its publish index
	settled   map[wire.MessageID]uint64   // settled IDs: the settle record's index
	ready     readyHeap
	delayed   []*message // by (readyAt, index)
}

func newQueueState(name string) *queueState {
	return &queueState{
		name:      name,
		messages:  make(map[wire.MessageID]*message),
		published: make(map[wire.MessageID]uint64),
		settled:   make(map[wire.MessageID]uint64),
	}
}

// apply applies the record at index, which must be the next one.
func (s *queueState) apply(index uint64, r record) {
	if index != s.applied+1 {
		panic(fmt.Sprintf("node: queue %s applies record %d after %d", s.name, index, s.applied))
	}
	s.applied = index
	switch r.typ {
	case recordCreate:
		s.created, s.policy, s.members = true, r.policy, slices.Clone(r.members)
	case recordPublish:
		s.applyPublish(index, r)
	case recordSettle:
		s.applySettle(index, r.id)
	case recordPromote:
		s.applyPromote(index, r.until)
	case recordDelete:
		s.deleted = true
	}
}

func (s *queueState) applyPublish(index uint64, r record) {
	if _, dup := s.published[r.id]; dup {
		return // the owner deduplicates; a duplicate record changes nothing
	}
	s.published[r.id] = index
	m := &message{id: r.id, index: index, payload: r.payload, readyAt: r.readyAt}
	s.messages[r.id] = m
	if r.readyAt > 0 {
		m.delayed = true
		at, _ := slices.BinarySearchFunc(s.delayed, m, compareDelayed)
		s.delayed = slices.Insert(s.delayed, at, m)
		return
	}
	m.key = readyKey{at: index, index: index}
	s.pushReady(m)
}

func compareDelayed(a, b *message) int {
	if a.readyAt != b.readyAt {
		if a.readyAt < b.readyAt {
			return -1
		}
		return 1
	}
	return int(a.index) - int(b.index)
}

func (s *queueState) applySettle(index uint64, id wire.MessageID) {
	m, ok := s.messages[id]
	if !ok {
		return // already settled, or never published
	}
	delete(s.messages, id)
	s.settled[id] = index
	if m.delayed {
		s.delayed = slices.DeleteFunc(s.delayed, func(d *message) bool { return d == m })
	}
	m.inHeap = false // the heap drops it lazily
}

// applyPromote releases every delayed message due by until, in
// (ready-at, publish index) order.
func (s *queueState) applyPromote(index uint64, until int64) {
	n := 0
	for n < len(s.delayed) && s.delayed[n].readyAt <= until {
		m := s.delayed[n]
		m.delayed = false
		m.key = readyKey{at: index, index: m.index}
		s.pushReady(m)
		n++
	}
	s.delayed = slices.Delete(s.delayed, 0, n)
}

// nextDue is the earliest ready-at time among delayed messages.
func (s *queueState) nextDue() (int64, bool) {
	if len(s.delayed) == 0 {
		return 0, false
	}
	return s.delayed[0].readyAt, true
}

func (s *queueState) pushReady(m *message) {
	if m.inHeap {
		panic(fmt.Sprintf("node: message %s pushed twice into the ready heap", m.id))
	}
	m.inHeap = true
	heap.Push(&s.ready, m)
}

// peekReady returns the first ready message, dropping stale heap entries.
func (s *queueState) peekReady() *message {
	for s.ready.Len() > 0 {
		m := s.ready[0]
		if m.inHeap && s.messages[m.id] == m {
			return m
		}
		heap.Pop(&s.ready)
	}
	return nil
}

// popReady removes and returns the first ready message.
func (s *queueState) popReady() *message {
	m := s.peekReady()
	if m != nil {
		heap.Pop(&s.ready)
		m.inHeap = false
	}
	return m
}

// readyHeap is a min-heap of messages by readyKey. Entries whose message
// left the heap logically (settled, leased) are dropped when they reach
// the top.
type readyHeap []*message

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].key.less(h[j].key) }
func (h readyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)        { *h = append(*h, x.(*message)) }
func (h *readyHeap) Pop() any {
	old := *h
	m := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return m
}

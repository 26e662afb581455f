package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/fifoheap"
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

// Before orders ready messages by their keys (fifoheap.Ordered).
func (m *message) Before(o *message) bool { return m.key.less(o.key) }

// message is an unsettled message in a queue's applied state.
type message struct {
	id      wire.MessageID
	index   uint64 // index of its publish record
	payload []byte
	readyAt int64 // Unix nanoseconds; 0 for an immediate message
	delayed bool  // waiting for a promote record
	key     readyKey
	// inHeap says the message sits in the ready queue. Leasing takes it
	// out; nack and lease expiry put it back. Whatever takes the message
	// out of the state (a settle, a purge) or out of delivery (a
	// dead-letter record) clears it, so a heap entry with it set is live
	// without a look in the message map (compactReady checks that).
	inHeap   bool
	lease    *lease
	attempts uint32
	// dead says a dead-letter record took the message out of delivery:
	// it waits, live, for its move to the dead-letter queue deadTo the
	// record named (empty: a record from before records named it, which
	// moves to the queue's current dead-letter queue).
	dead   bool
	deadTo string
	// deadIndex is the dead-letter record's index, which names the move
	// to the dead-letter queue (movedin.go); zero in a state decoded from
	// a checkpoint written before checkpoints kept it.
	deadIndex uint64
	// gone says the message left the state (settled or purged), so that
	// what holds it still (an ack taken this turn) can tell without a
	// look in the message map. settling marks it while its owner writes
	// the turn's settles record (turn.go).
	gone     bool
	settling bool
}

// queueState is the deterministic state a queue's log applies to. Every
// replica that applies the same records reaches the same state; the
// owner-local parts (leases, subscriptions) live elsewhere.
type queueState struct {
	name     string
	created  bool
	deleted  bool
	policy   wire.Policy
	members  []NodeID
	applied  uint64
	messages map[wire.MessageID]*message // unsettled
	// known holds the IDs published within the deduplication window
	// (with their publish index) and those settled within it (with the
	// settle record's index). Older ones are forgotten: a retry of a
	// publish older than the window is a new message, and an ack of a
	// message settled longer ago is refused as not leased.
	known   knownIDs
	ready   fifoheap.Queue[*message]
	delayed []*message // by (readyAt, index)
	// deadInHeap counts ready-heap entries whose message was settled
	// while it sat there. A replica that never delivers (a follower's
	// checkpoint builder) settles every message in the heap, so the heap
	// is compacted once most of it is dead, or it would hold every
	// message ever published.
	deadInHeap int
	// window is the deduplication window in nanoseconds, set by the
	// latest epoch marker; zero keeps every ID (a log from before
	// windows). clock is the latest stamp applied; stamps never go back,
	// since owners stamp with at least the clock of the state they
	// append to. recent lists the stamped publishes and settles still in
	// published or settled, oldest first.
	window int64
	clock  int64
	recent windowList
	// recentBase numbers the first entry of recent among every entry this state
	// ever listed; the window journal files entries by that number. It is
	// this replica's own bookkeeping, not part of the state replicas
	// compare. recentSum is the multiset digest of the listed entries, kept
	// as they come and go, so a checkpoint can vouch for the list without
	// hashing it whole. Only states checkpoints are built from keep it
	// (keepSum): hashing each ID as it comes and as it goes costs about a
	// tenth of applying a record, which an owner's live state, never
	// encoded, should not pay. sumStale says entries came or went while
	// it was not kept, so encoding would write a wrong digest.
	recentBase uint64
	recentSum  windowSum
	keepSum    bool
	sumStale   bool
	// dead counts the live messages a dead-letter record took out of
	// delivery.
	dead int
	// messageBytes is what the live messages take in a checkpoint's
	// encoding (messageSize), kept as they come and go, so an owner short
	// of space can tell at once how small a checkpoint built now would be.
	// It is this replica's own bookkeeping, not part of the state
	// replicas compare.
	messageBytes int64
	// unstamped counts IDs remembered from records without a stamp
	// (written before stamps): they are never forgotten, and a checkpoint
	// must list the ID sets whole, since recent does not hold them.
	unstamped int
	// movedIn is, in a dead-letter queue, the moves each source has not
	// yet said it settled (movedin.go); nil until a move comes.
	movedIn map[moveSource]*moveLedger
	// filling says the ID maps of a copy (stateclone.go) are still being
	// filled from the window: filled entries so far, of a window whose
	// original remembered fillWant IDs. Such a state applies nothing
	// until they are whole.
	filling  bool
	filled   int
	fillWant int
	// peaks are the most entries each map held since it was made.
	peaks mapPeaks
}

// mapPeaks are the most entries the state's message map held since it
// was made (the ID map keeps its own, knownIDs.peak). Go's maps never give back the room they grew to:
// a window that once held a burst of 1,000,000 publishes and acks kept
// about 100 MB of empty map after the burst left it, so the state's
// memory followed the largest window or backlog it ever had, not its
// present one. shrinkMaps remakes a map once it holds under a quarter of
// its peak.
type mapPeaks struct{ messages int }

// mapShrinkMin is the smallest peak worth remaking a map for. It is low
// so that the simulator's small queues remake their maps too: a remake
// changes no entry, so the swarm's runs check that it changes nothing
// else either.
const mapShrinkMin = 64

// shrinkMaps notes each map's size and remakes, at its present size, any
// that holds under a quarter of its peak. The cost, a copy of the
// entries left, is at most a third of the deletions since the peak.
func (s *queueState) shrinkMaps() {
	s.messages = shrunk(s.messages, &s.peaks.messages)
	s.known.shrink()
}

// shrunk returns m, or a copy of it made at its size once it holds under
// a quarter of *peak, which it keeps up to date.
func shrunk[K comparable, V any](m map[K]V, peak *int) map[K]V {
	n := len(m)
	*peak = max(*peak, n)
	if *peak < mapShrinkMin || n >= *peak/4 {
		return m
	}
	c := make(map[K]V, n)
	maps.Copy(c, m) // the same entries: the copy's order is no one's concern
	*peak = n
	return c
}

// recentID is one stamped publish or settle, kept until it leaves the
// deduplication window.
type recentID struct {
	id wire.MessageID
	// packed holds the record's index, and in its top bit whether the
	// record settled the message: an entry takes 32 bytes, not 40, and a
	// busy queue's window holds millions of them.
	packed uint64
	at     int64
}

// settledBit marks a settle in recentID.packed. Log indexes stay far
// below it.
const settledBit = 1 << 63

// newRecentID makes the entry of a publish, or a settle, at index.
func newRecentID(id wire.MessageID, index uint64, at int64, settled bool) recentID {
	if index&settledBit != 0 {
		panic(fmt.Sprintf("node: log index %d does not fit a window entry", index))
	}
	if settled {
		index |= settledBit
	}
	return recentID{id: id, packed: index, at: at}
}

// index is the entry's log index.
func (e recentID) index() uint64 { return e.packed &^ settledBit }

// settled reports whether the entry is a settle rather than a publish.
func (e recentID) settled() bool { return e.packed&settledBit != 0 }

func newQueueState(name string) *queueState {
	return &queueState{
		name:     name,
		messages: make(map[wire.MessageID]*message),
		known:    newKnownIDs(),
	}
}

// apply applies the record at index, which must be the next one.
func (s *queueState) apply(index uint64, r record) {
	if s.filling {
		panic(fmt.Sprintf("node: queue %s applies record %d before its ID maps are filled", s.name, index))
	}
	if index != s.applied+1 {
		panic(fmt.Sprintf("node: queue %s applies record %d after %d", s.name, index, s.applied))
	}
	s.applied = index
	switch r.typ {
	case recordCreate:
		s.created, s.policy, s.members = true, r.policy, slices.Clone(r.members)
	case recordPublish:
		s.applyPublish(index, r)
	case recordMovedIn:
		s.applyPublish(index, r)
		s.applyMovedIn(index, r.id, r.from)
	case recordSettle:
		s.applySettle(index, r)
	case recordSettles:
		for _, id := range r.ids {
			s.applySettle(index, record{typ: recordSettle, id: id, at: r.at})
		}
	case recordDeadLetter:
		s.applyDeadLetter(index, r.id, r.to)
	case recordPromote:
		s.applyPromote(index, r.until)
	case recordPurge:
		s.applyPurge(index, r.through, r.at)
		if r.id != (wire.MessageID{}) {
			// The purge's token is remembered as a settle is, for the
			// window: a retried purge is answered with this index. (As
			// a settle, not a publish: no message of that ID is live.)
			s.known.note(r.id, index, true)
			s.remember(r.id, index, r.at, true)
		}
	case recordDelete:
		s.deleted = true
	case recordEpochMark:
		if r.at != 0 {
			s.window = r.window
		}
	}
	if r.at > s.clock {
		s.clock = r.at
		s.forget()
	}
	s.shrinkMaps()
}

// publishedIndex reports whether id was published and is still known:
// live, published within the window, or settled within the window. The
// index is its publish record's while that is remembered, else its
// settle record's. Counting settles matters most for a move to a
// dead-letter queue: its source asks again until it hears the answer,
// which can be long after the store if the source queue fails over
// meanwhile, and a message consumed from the dead-letter queue since must
// not be stored there again while its ack is remembered.
func (s *queueState) publishedIndex(id wire.MessageID) (uint64, bool) {
	if m, ok := s.messages[id]; ok {
		return m.index, true
	}
	e, ok := s.known.lookup(id)
	if !ok {
		return 0, false
	}
	if e.published != 0 {
		return e.published, true
	}
	return e.settled, true
}

// remember notes a stamped publish or settle, to be forgotten once it
// leaves the window.
func (s *queueState) remember(id wire.MessageID, index uint64, at int64, settled bool) {
	if at == 0 {
		s.unstamped++
		return
	}
	e := newRecentID(id, index, at, settled)
	s.recent.push(e)
	if s.keepSum {
		s.recentSum.add(e)
	} else {
		s.sumStale = true
	}
}

// forget drops the IDs published or settled more than the window before
// the clock. A live message stays whatever its age: it is in messages,
// which deduplicates it until it is settled.
func (s *queueState) forget() {
	if s.window <= 0 {
		return
	}
	horizon := s.clock - s.forgetWindow()
	for s.recent.len() > 0 && s.recent.front().at < horizon {
		e := s.recent.popFront()
		s.recentBase++
		if s.keepSum {
			s.recentSum.remove(e)
		} else {
			s.sumStale = true
		}
		s.known.forget(e.id, e.index(), e.settled())
	}
}

// forgetWindow is how far back forget keeps IDs.
func (s *queueState) forgetWindow() int64 {
	if bugs.Active(bugs.DedupForgetsEarly) {
		return s.window / 4 // planted: retries inside the window are stored again
	}
	return s.window
}

func (s *queueState) applyPublish(index uint64, r record) {
	if _, dup := s.publishedIndex(r.id); dup {
		return // the owner deduplicates; a duplicate record changes nothing
	}
	s.known.note(r.id, index, false)
	s.remember(r.id, index, r.at, false)
	m := &message{id: r.id, index: index, payload: r.payload, readyAt: r.readyAt}
	s.messages[r.id] = m
	s.messageBytes += messageSize(m)
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

func (s *queueState) applySettle(index uint64, r record) {
	id := r.id
	m, ok := s.messages[id]
	if !ok {
		return // already settled, or never published
	}
	delete(s.messages, id)
	m.gone = true
	s.messageBytes -= messageSize(m)
	if m.dead {
		s.dead--
	}
	s.known.note(id, index, true)
	s.remember(id, index, r.at, true)
	if m.delayed {
		s.delayed = slices.DeleteFunc(s.delayed, func(d *message) bool { return d == m })
	}
	if m.inHeap {
		m.inHeap = false // the heap drops it lazily, or compactReady does
		s.deadInHeap++
		if s.deadInHeap > 1024 && s.deadInHeap > s.ready.Len()/2 {
			s.compactReady()
		}
	}
}

// applyDeadLetter takes a live message out of delivery until its move to
// the dead-letter queue settles it. The owner writes the record for a
// message no one leases, which is neither ready nor delayed; replicas
// that apply it (followers, rebuilt states) may hold it ready. The move
// goes to queue to, whatever the queue's setting says by then.
func (s *queueState) applyDeadLetter(index uint64, id wire.MessageID, to string) {
	m, ok := s.messages[id]
	if !ok || m.dead {
		return // settled meanwhile, or named twice: nothing changes
	}
	if m.delayed {
		panic(fmt.Sprintf("node: queue %s dead-letters %s, which was never delivered", s.name, id))
	}
	m.dead, m.deadTo, m.deadIndex = true, to, index
	s.dead++
	if m.inHeap {
		m.inHeap = false // dropped lazily, as a settled message is
		s.deadInHeap++
	}
}

// compactReady drops the dead entries from the ready queue at once. The
// order messages come out in depends only on their keys, which are
// unique, so rebuilding the queue changes nothing a replica does.
func (s *queueState) compactReady() {
	s.ready.Filter(func(m *message) bool {
		if !m.inHeap {
			return false
		}
		if s.messages[m.id] != m {
			panic(fmt.Sprintf("node: queue %s holds message %s ready after it left the state", s.name, m.id))
		}
		return true
	})
	if !s.ready.InOrder() {
		panic(fmt.Sprintf("node: queue %s ready messages out of key order", s.name))
	}
	s.deadInHeap = 0
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
		panic(fmt.Sprintf("node: message %s pushed twice into the ready queue", m.id))
	}
	m.inHeap = true
	s.ready.Push(m)
}

// peekReady returns the first ready message, dropping stale entries.
func (s *queueState) peekReady() *message {
	for {
		// No look in the message map: a drain peeks at every delivery,
		// and that lookup in a map of the whole backlog was an eighth of
		// a draining owner's CPU.
		m, ok := s.ready.First()
		if !ok || m.inHeap {
			return m
		}
		s.ready.Pop()
		s.deadInHeap = max(0, s.deadInHeap-1)
	}
}

// popReady removes and returns the first ready message.
func (s *queueState) popReady() *message {
	m := s.peekReady()
	if m != nil {
		s.ready.Pop()
		m.inHeap = false
	}
	return m
}

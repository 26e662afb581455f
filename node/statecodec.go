package node

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"hash"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// stateCodecVersion opens every encoded queue state; a checkpoint of an
// unknown version is refused, never guessed at. Version 2 added the
// deduplication window, the clock and the stamped IDs it will forget;
// version 1 states are still read, with no window. Version 3 says whether
// the window's entries follow inline or sit in the window journal, and
// carries their multiset digest. Version 4 writes a flags byte where a
// message's delayed flag was, adding whether a dead-letter record took it
// out of delivery. Version 5 follows a dead message's flags with the
// dead-letter queue its move goes to; a version 4 state's dead messages
// read with none, as their records had none. Version 6 follows that with
// the dead-letter record's index, and writes a dead-letter queue's
// moved-in ledgers after the clock (movedin.go); a version 5 state has
// none, and its dead messages read with index zero.
const stateCodecVersion = 6

// Message flags, version 4 on.
const (
	messageDelayed uint8 = 1 << iota
	messageDead
)

// encodeState renders a queue's applied state as bytes, the same bytes on
// every replica that applied the same records: messages in publish order,
// ID sets in ID order, never in map order. Owner-local parts (leases,
// delivery attempts, the running number of the window's first entry) are
// not part of it. The window's entries follow inline: this is the form a
// checkpoint travels in.
func encodeState(s *queueState) []byte { return encodeStateForm(s, false) }

// encodeStateJournaled is encodeState with the window's entries left to
// the window journal: only their count and digest are written. It is the
// form a built checkpoint's file holds, and the bytes a state digest
// covers.
func encodeStateJournaled(s *queueState) []byte { return encodeStateForm(s, true) }

func encodeStateForm(s *queueState, journaled bool) []byte {
	msgs := encodedMessages(s)
	b := make([]byte, 0, encodedStateSize(s, msgs, journaled))
	b = appendStateHead(b, s, len(msgs))
	for _, m := range msgs {
		b = appendMessage(b, m)
	}
	return appendStateTail(b, s, journaled)
}

// stateEncoding is a state's journaled encoding written over several
// steps, and its digest computed as it grows: the same bytes and digest
// as encodeStateJournaled and stateDigest give at once. The state must
// not change until it is done.
type stateEncoding struct {
	s      *queueState
	msgs   []*message
	next   int // the next message to write
	buf    []byte
	hashed int // how much of buf the hash has taken
	h      hash.Hash
}

func newStateEncoding(s *queueState) *stateEncoding {
	msgs := encodedMessages(s)
	buf := make([]byte, 0, encodedStateSize(s, msgs, true))
	return &stateEncoding{s: s, msgs: msgs, buf: appendStateHead(buf, s, len(msgs)), h: sha256.New()}
}

// step writes about budget bytes more of messages, and reports whether
// the encoding is complete.
func (e *stateEncoding) step(budget int) bool {
	start := len(e.buf)
	for e.next < len(e.msgs) && len(e.buf)-start < budget {
		e.buf = appendMessage(e.buf, e.msgs[e.next])
		e.next++
	}
	done := e.next == len(e.msgs)
	if done {
		e.buf = appendStateTail(e.buf, e.s, true)
	}
	e.h.Write(e.buf[e.hashed:])
	e.hashed = len(e.buf)
	return done
}

// sum is the digest of the complete encoding.
func (e *stateEncoding) sum() [32]byte {
	if e.next < len(e.msgs) || e.hashed != len(e.buf) {
		panic(fmt.Sprintf("node: queue %s: digest of an encoding %d of %d messages in", e.s.name, e.next, len(e.msgs)))
	}
	var d [32]byte
	e.h.Sum(d[:0])
	return d
}

// encodedMessages lists the live messages a state's encoding holds, in
// publish order.
func encodedMessages(s *queueState) []*message {
	if s.sumStale {
		panic(fmt.Sprintf("node: queue %s encodes a state whose window digest was not kept", s.name))
	}
	msgs := sortedMessages(s)
	if bugs.Active(bugs.CheckpointDropsUnacked) && len(msgs) > 0 {
		msgs = msgs[:len(msgs)-1] // planted: the newest live message is left out
	}
	return msgs
}

// appendStateHead writes what comes before a state's live messages: the
// queue's settings, the applied index and the count of messages that
// follow. An encoding is the head, each message in publish order
// (appendMessage), then the tail (appendStateTail); a checkpoint build
// writes the messages over several steps.
func appendStateHead(b []byte, s *queueState, messages int) []byte {
	b = wire.AppendUint8(b, stateCodecVersion)
	b = wire.AppendBool(b, s.created)
	b = wire.AppendBool(b, s.deleted)
	b = wire.AppendUint8(b, uint8(s.policy))
	b = wire.AppendUint32(b, uint32(len(s.members)))
	for _, m := range s.members {
		b = wire.AppendUint32(b, uint32(m))
	}
	b = wire.AppendUint64(b, s.applied)
	return wire.AppendUint32(b, uint32(messages))
}

// appendMessage writes one live message.
func appendMessage(b []byte, m *message) []byte {
	b = appendID(b, m.id)
	b = wire.AppendUint64(b, m.index)
	b = wire.AppendInt64(b, m.readyAt)
	var flags uint8
	if m.delayed {
		flags |= messageDelayed
	}
	if m.dead {
		flags |= messageDead
	}
	b = wire.AppendUint8(b, flags)
	if m.dead {
		b = wire.AppendString(b, m.deadTo)
		b = wire.AppendUint64(b, m.deadIndex)
	}
	b = wire.AppendUint64(b, m.key.at)
	if bugs.Active(bugs.CheckpointTrimsPayload) && len(m.payload) > 0 {
		return wire.AppendBytes(b, m.payload[:len(m.payload)-1]) // planted
	}
	return wire.AppendBytes(b, m.payload)
}

// appendStateTail writes what follows the live messages: the ID sets and
// the deduplication window, its entries inline or (journaled) left to
// the window journal.
func appendStateTail(b []byte, s *queueState, journaled bool) []byte {
	// The ID sets are what recent lists, unless some IDs came from
	// records without stamps: only then are they written out whole,
	// sorted, which for a busy queue costs more than the rest together.
	whole := s.unstamped > 0
	b = wire.AppendBool(b, whole)
	if whole {
		b = appendIDIndexes(b, s.known.sorted(false))
		b = appendIDIndexes(b, s.known.sorted(true))
	}
	b = wire.AppendInt64(b, s.window)
	b = wire.AppendInt64(b, s.clock)
	b = appendMovedIn(b, s)
	b = wire.AppendBool(b, journaled)
	b = wire.AppendUint32(b, uint32(s.recent.len()))
	b = wire.AppendUint64(b, s.recentSum[0])
	b = wire.AppendUint64(b, s.recentSum[1])
	if journaled {
		return b
	}
	for e := range s.recent.all() {
		b = appendRecent(b, e)
	}
	return b
}

// appendRecent writes one window entry, journalEntrySize bytes: in the
// inline window and in a journal batch alike.
func appendRecent(b []byte, e recentID) []byte {
	b = appendID(b, e.id)
	b = wire.AppendUint64(b, e.index())
	b = wire.AppendInt64(b, e.at)
	return wire.AppendBool(b, e.settled())
}

// decodeRecent reads what appendRecent wrote.
func decodeRecent(d *wire.Decoder) (recentID, error) {
	id := wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
	index, at, settled := d.Uint64(), d.Int64(), d.Bool()
	if index&settledBit != 0 {
		return recentID{}, fmt.Errorf("a window entry names log index %d, past any a log reaches", index)
	}
	return newRecentID(id, index, at, settled), nil
}

// encodedStateSize is the size encodeState's bytes will have (an upper
// bound), so the buffer is allocated once: a checkpoint of a busy queue
// runs to megabytes, and growing it step by step copies it many times.
func encodedStateSize(s *queueState, msgs []*message, journaled bool) int {
	n := 96 + 4*len(s.members) + movedInSize(s)
	if !journaled {
		n += journalEntrySize * s.recent.len()
	}
	if s.unstamped > 0 {
		n += 24 * s.known.len()
	}
	for _, m := range msgs {
		n += int(messageSize(m))
		if m.dead {
			n += 4 + len(m.deadTo) + 8
		}
	}
	return n
}

// messageSize is what a live message takes in an encoded state, leaving
// out what a dead-letter record adds: the fixed fields and the payload.
func messageSize(m *message) int64 { return 8 + 8 + 8 + 8 + 1 + 8 + 4 + int64(len(m.payload)) }

// stateDigest is what replicas compare to agree that their checkpoints at
// one cut hold the same state: a hash of the journaled form, which names
// the window by its count and multiset digest, so a checkpoint built here
// and one installed from elsewhere compare alike.
func stateDigest(s *queueState) [32]byte { return sha256.Sum256(encodeStateJournaled(s)) }

func sortedMessages(s *queueState) []*message {
	return slices.SortedFunc(maps.Values(s.messages), func(a, b *message) int { return cmp.Compare(a.index, b.index) })
}

func appendID(b []byte, id wire.MessageID) []byte {
	b = wire.AppendUint64(b, id.Producer)
	return wire.AppendUint64(b, id.Seq)
}

func compareIDs(a, b wire.MessageID) int {
	if c := cmp.Compare(a.Producer, b.Producer); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// appendIDIndexes writes an ID-to-index map in ID order.
func appendIDIndexes(b []byte, ids []idIndex) []byte {
	b = wire.AppendUint32(b, uint32(len(ids)))
	for _, e := range ids {
		b = appendID(b, e.id)
		b = wire.AppendUint64(b, e.index)
	}
	return b
}

// decodeState rebuilds a queue state from encodeState's bytes. The ready
// heap and the delayed list are rebuilt in the order replay would have
// built them, so a state decoded from a checkpoint serves exactly as one
// rebuilt from the whole log. A journaled state takes its window's
// entries from window, given their count.
func decodeState(name string, data []byte, window func(count int) (windowList, error)) (*queueState, error) {
	d := wire.NewDecoder(data)
	v := d.Uint8()
	if v < 1 || v > stateCodecVersion {
		return nil, fmt.Errorf("queue state version %d, want 1 to %d", v, stateCodecVersion)
	}
	s := newQueueState(name)
	s.created, s.deleted, s.policy = d.Bool(), d.Bool(), wire.Policy(d.Uint8())
	for range d.Count(4) {
		s.members = append(s.members, NodeID(d.Uint32()))
	}
	s.applied = d.Uint64()
	for range d.Count(8 + 8 + 8 + 8 + 1 + 8 + 4) {
		m, err := decodeMessage(d, v)
		if err != nil {
			return nil, err
		}
		if _, dup := s.messages[m.id]; dup {
			return nil, fmt.Errorf("queue state holds message %s twice", m.id)
		}
		s.messages[m.id] = m
		s.messageBytes += messageSize(m)
		switch {
		case m.dead:
			s.dead++
		case m.delayed:
			s.delayed = append(s.delayed, m)
		default:
			s.pushReady(m)
		}
	}
	slices.SortFunc(s.delayed, compareDelayed)
	whole := v == 1 || d.Bool()
	if whole {
		if err := decodeIDIndexes(d, &s.known, false); err != nil {
			return nil, err
		}
		if err := decodeIDIndexes(d, &s.known, true); err != nil {
			return nil, err
		}
		s.unstamped = s.known.len()
	}
	if v >= 2 {
		s.window, s.clock = d.Int64(), d.Int64()
		if v >= 6 {
			if err := decodeMovedIn(d, s); err != nil {
				return nil, err
			}
		}
		if err := decodeWindow(d, v, s, window); err != nil {
			return nil, err
		}
	}
	if !whole {
		// Every remembered ID is in recent; replaying it in order leaves
		// each ID with its latest index, as applying the records did.
		s.known = newKnownIDs()
		for e := range s.recent.all() {
			s.known.note(e.id, e.index(), e.settled())
		}
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("queue state: %w", err)
	}
	return s, nil
}

// decodeWindow reads the window's entries: inline, or (from version 3) by
// count and digest from the window journal, through window.
func decodeWindow(d *wire.Decoder, v uint8, s *queueState, window func(count int) (windowList, error)) error {
	journaled := v >= 3 && d.Bool()
	var n int
	if journaled {
		n = int(d.Uint32())
	} else {
		n = d.Count(journalEntrySize)
	}
	if v >= 3 {
		s.recentSum = windowSum{d.Uint64(), d.Uint64()}
	}
	if !journaled {
		for range n {
			e, err := decodeRecent(d)
			if err != nil {
				return err
			}
			s.recent.push(e)
		}
		if v < 3 {
			s.recentSum = s.recent.sum()
		}
		return nil
	}
	if window == nil {
		return fmt.Errorf("queue state keeps its %d window entries in a journal, and none was given", n)
	}
	entries, err := window(n)
	if err != nil {
		return err
	}
	if entries.len() != n {
		return fmt.Errorf("window journal gave %d entries for %d", entries.len(), n)
	}
	s.recent = entries
	return nil
}

// checkWindow verifies the window's entries against their digest: what a
// replica does with a window it read from disk or was sent.
func (s *queueState) checkWindow() error {
	if got := s.recent.sum(); got != s.recentSum {
		return fmt.Errorf("queue %s window of %d entries does not match its digest", s.name, s.recent.len())
	}
	return nil
}

// decodeMessage reads what appendMessage wrote, in version v's form.
func decodeMessage(d *wire.Decoder, v uint8) (*message, error) {
	m := &message{id: wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}, index: d.Uint64(), readyAt: d.Int64()}
	if v < 4 {
		m.delayed = d.Bool()
	} else {
		flags := d.Uint8()
		if flags&^(messageDelayed|messageDead) != 0 || flags == messageDelayed|messageDead {
			return nil, fmt.Errorf("queue state message %s has flags %#x", m.id, flags)
		}
		m.delayed, m.dead = flags&messageDelayed != 0, flags&messageDead != 0
		if m.dead && v >= 5 {
			m.deadTo = d.String()
		}
		if m.dead && v >= 6 {
			m.deadIndex = d.Uint64()
		}
	}
	m.key = readyKey{at: d.Uint64(), index: m.index}
	m.payload = d.Bytes()
	return m, nil
}

func decodeIDIndexes(d *wire.Decoder, into *knownIDs, settled bool) error {
	for range d.Count(24) {
		id := wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
		known, _ := into.lookup(id)
		if (settled && known.settled != 0) || (!settled && known.published != 0) {
			return fmt.Errorf("queue state holds ID %s twice", id)
		}
		index := d.Uint64()
		if index == 0 {
			return fmt.Errorf("queue state remembers ID %s at log index 0", id)
		}
		into.note(id, index, settled)
	}
	return nil
}

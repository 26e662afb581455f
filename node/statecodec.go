package node

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/wire"
)

// stateCodecVersion opens every encoded queue state; a checkpoint of an
// unknown version is refused, never guessed at. Version 2 added the
// deduplication window, the clock and the stamped IDs it will forget;
// version 1 states are still read, with no window.
const stateCodecVersion = 2

// encodeState renders a queue's applied state as bytes, the same bytes on
// every replica that applied the same records: messages in publish order,
// ID sets in ID order, never in map order. Owner-local parts (leases,
// delivery attempts) are not part of it.
func encodeState(s *queueState) []byte {
	msgs := sortedMessages(s)
	b := make([]byte, 0, encodedStateSize(s, msgs))
	b = wire.AppendUint8(b, stateCodecVersion)
	b = wire.AppendBool(b, s.created)
	b = wire.AppendBool(b, s.deleted)
	b = wire.AppendUint8(b, uint8(s.policy))
	b = wire.AppendUint32(b, uint32(len(s.members)))
	for _, m := range s.members {
		b = wire.AppendUint32(b, uint32(m))
	}
	b = wire.AppendUint64(b, s.applied)
	if bugs.Active(bugs.CheckpointDropsUnacked) && len(msgs) > 0 {
		msgs = msgs[:len(msgs)-1] // planted: the newest live message is left out
	}
	b = wire.AppendUint32(b, uint32(len(msgs)))
	for _, m := range msgs {
		b = appendID(b, m.id)
		b = wire.AppendUint64(b, m.index)
		b = wire.AppendInt64(b, m.readyAt)
		b = wire.AppendBool(b, m.delayed)
		b = wire.AppendUint64(b, m.key.at)
		b = wire.AppendBytes(b, m.payload)
	}
	// The ID sets are what recent lists, unless some IDs came from
	// records without stamps: only then are they written out whole,
	// sorted, which for a busy queue costs more than the rest together.
	whole := s.unstamped > 0
	b = wire.AppendBool(b, whole)
	if whole {
		b = appendIDIndexes(b, s.published)
		b = appendIDIndexes(b, s.settled)
	}
	b = wire.AppendInt64(b, s.window)
	b = wire.AppendInt64(b, s.clock)
	recent := s.recent[s.recentHead:]
	b = wire.AppendUint32(b, uint32(len(recent)))
	for _, e := range recent {
		b = appendID(b, e.id)
		b = wire.AppendUint64(b, e.index)
		b = wire.AppendInt64(b, e.at)
		b = wire.AppendBool(b, e.settled)
	}
	return b
}

// encodedStateSize is the size encodeState's bytes will have (an upper
// bound), so the buffer is allocated once: a checkpoint of a busy queue
// runs to megabytes, and growing it step by step copies it many times.
func encodedStateSize(s *queueState, msgs []*message) int {
	n := 64 + 4*len(s.members) + 33*len(s.recent[s.recentHead:])
	if s.unstamped > 0 {
		n += 24 * (len(s.published) + len(s.settled))
	}
	for _, m := range msgs {
		n += 8 + 8 + 8 + 8 + 1 + 8 + 4 + len(m.payload)
	}
	return n
}

// stateDigest is what replicas compare to agree that their checkpoints at
// one cut hold the same state.
func stateDigest(state []byte) [32]byte { return sha256.Sum256(state) }

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
func appendIDIndexes(b []byte, m map[wire.MessageID]uint64) []byte {
	ids := slices.SortedFunc(maps.Keys(m), compareIDs)
	b = wire.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = appendID(b, id)
		b = wire.AppendUint64(b, m[id])
	}
	return b
}

// decodeState rebuilds a queue state from encodeState's bytes. The ready
// heap and the delayed list are rebuilt in the order replay would have
// built them, so a state decoded from a checkpoint serves exactly as one
// rebuilt from the whole log.
func decodeState(name string, data []byte) (*queueState, error) {
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
		m := &message{id: wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}, index: d.Uint64(), readyAt: d.Int64(), delayed: d.Bool()}
		m.key = readyKey{at: d.Uint64(), index: m.index}
		m.payload = d.Bytes()
		if _, dup := s.messages[m.id]; dup {
			return nil, fmt.Errorf("queue state holds message %s twice", m.id)
		}
		s.messages[m.id] = m
		if m.delayed {
			s.delayed = append(s.delayed, m)
		} else {
			s.pushReady(m)
		}
	}
	slices.SortFunc(s.delayed, compareDelayed)
	whole := v == 1 || d.Bool()
	if whole {
		if err := decodeIDIndexes(d, s.published); err != nil {
			return nil, err
		}
		if err := decodeIDIndexes(d, s.settled); err != nil {
			return nil, err
		}
		s.unstamped = len(s.published) + len(s.settled)
	}
	if v >= 2 {
		s.window, s.clock = d.Int64(), d.Int64()
		n := d.Count(8 + 8 + 8 + 8 + 1)
		s.recent = make([]recentID, 0, n)
		for range n {
			s.recent = append(s.recent, recentID{id: wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}, index: d.Uint64(),
				at: d.Int64(), settled: d.Bool()})
		}
	}
	if !whole {
		// Every remembered ID is in recent; replaying it in order leaves
		// each ID with its latest index, as applying the records did. The
		// maps are sized first: growing them entry by entry costs a
		// restarting replica more than reading the state does.
		settled := 0
		for _, e := range s.recent {
			if e.settled {
				settled++
			}
		}
		s.published = make(map[wire.MessageID]uint64, len(s.recent)-settled)
		s.settled = make(map[wire.MessageID]uint64, settled)
		for _, e := range s.recent {
			if e.settled {
				s.settled[e.id] = e.index
			} else {
				s.published[e.id] = e.index
			}
		}
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("queue state: %w", err)
	}
	return s, nil
}

func decodeIDIndexes(d *wire.Decoder, into map[wire.MessageID]uint64) error {
	for range d.Count(24) {
		id := wire.MessageID{Producer: d.Uint64(), Seq: d.Uint64()}
		if _, dup := into[id]; dup {
			return fmt.Errorf("queue state holds ID %s twice", id)
		}
		into[id] = d.Uint64()
	}
	return nil
}

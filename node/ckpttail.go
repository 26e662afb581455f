package node

import (
	"fmt"

	"github.com/cairnmq/cairn/storage"
)

// The records a replica appended lately, kept as decoded so that its
// checkpoint base rolls forward from memory. A base rolls a tick's worth
// of confirmed records at a time, records the replica had in hand a few
// milliseconds before: a follower decoded each when it accepted it, the
// owner built each before it encoded it. Reading them back from the log
// and decoding them again was half of what rolling cost (profiles at
// 10,000 msg/s: 0.44 s of a follower's 0.98 s of rolling in 30 s; an
// owner still decodes what it wrote, keepEncodedInTail), and
// rolling was most of what checkpoints cost a replica. The log stays the
// source of truth: a record the tail does not hold, or whose history
// digest the log no longer remembers, is read from the log as before.

// tailRecordsMax and tailBytesMax bound the tail: while no base rolls
// (a build under way, no base kept yet) it keeps only its newest records,
// and the base reads the rest from the log.
const (
	tailRecordsMax = 16 << 10
	tailBytesMax   = 8 << 20
)

// recordTail holds decoded records at consecutive indexes, first onward.
type recordTail struct {
	first uint64
	recs  []record
	bytes int
}

// end is the index after the tail's last record.
func (t *recordTail) end() uint64 { return t.first + uint64(len(t.recs)) }

// add appends the record at index. One that does not follow the tail's
// last record starts the tail anew.
func (t *recordTail) add(index uint64, rec record) {
	if len(t.recs) > 0 && index != t.end() {
		t.reset()
	}
	if len(t.recs) == 0 {
		t.first = index
	}
	t.recs = append(t.recs, rec)
	t.bytes += tailRecordBytes(rec)
	for len(t.recs) > tailRecordsMax || (t.bytes > tailBytesMax && len(t.recs) > 1) {
		t.dropThrough(t.first + uint64(max(1, len(t.recs)/4)) - 1)
	}
}

// tailRecordBytes is what a record keeps alive in the tail, roughly: the
// record itself (about 200 bytes) and what its slices hold.
func tailRecordBytes(rec record) int {
	return 256 + len(rec.payload) + 16*len(rec.ids) + len(rec.to)
}

// after returns up to n records from index from+1 through to, or false if
// the tail does not hold the record at from+1.
func (t *recordTail) after(from, to uint64, n int) ([]record, bool) {
	if from+1 < t.first || from+1 >= t.end() || to <= from || n <= 0 {
		return nil, false
	}
	i := from + 1 - t.first
	last := min(to, t.end()-1, from+uint64(n))
	return t.recs[i : last-t.first+1], true
}

// dropThrough forgets the records at and below index.
func (t *recordTail) dropThrough(index uint64) {
	if index < t.first {
		return
	}
	if index >= t.end()-1 {
		t.reset()
		return
	}
	n := index - t.first + 1
	for _, rec := range t.recs[:n] {
		t.bytes -= tailRecordBytes(rec)
	}
	clear(t.recs[:n]) // their payloads are no one's concern from here
	t.recs = t.recs[n:]
	t.first += n
}

// truncateAfter forgets the records past index: the log dropped them.
func (t *recordTail) truncateAfter(index uint64) {
	switch {
	case index+1 <= t.first:
		t.reset()
	case index+1 < t.end():
		n := index + 1 - t.first
		for _, rec := range t.recs[n:] {
			t.bytes -= tailRecordBytes(rec)
		}
		clear(t.recs[n:])
		t.recs = t.recs[:n]
	}
}

// tailKeptCap is the most room an empty tail keeps for the next tick's
// records; past it the room goes back to the collector.
const tailKeptCap = 4096

// reset forgets every record. An empty tail keeps its room, at most
// tailKeptCap records of it, for the next tick's records.
func (t *recordTail) reset() {
	clear(t.recs)
	*t = recordTail{recs: t.recs[:0]}
	if cap(t.recs) > tailKeptCap {
		t.recs = nil
	}
}

// release gives an empty tail's room back: its queue rests, and a node
// with thousands of resting queues should not keep room for each.
func (t *recordTail) release() {
	if len(t.recs) == 0 {
		t.recs = nil
	}
}

// keepInTail keeps the record just appended at index for the base to
// roll from, while there is a base to roll. Without one (a replica
// restarted and not yet built, or one that never built) nothing would
// take the records out, and each busy queue's tail would sit at its
// bounds; the base, once there, reads what it lacks from the log.
func (r *replica) keepInTail(index uint64, rec record) {
	if r.keepsTail() {
		r.tail.add(index, rec)
	}
}

// keepsTail reports whether the replica keeps its appended records: it
// keeps checkpoints, and has a base or a build to roll them into.
func (r *replica) keepsTail() bool {
	return r.n.cfg.CheckpointRecords >= 0 && (r.ckptState != nil || r.build != nil)
}

// keepEncodedInTail is keepInTail for a record the owner wrote: it keeps
// the record decoded from the written bytes, exactly what every follower
// applies. The record as built did not serve, though it equalled its
// decoded bytes when written: in seed 3525 the owner's base, rolled from
// built records a tick later, reached another state than a follower's at
// the same cut. Why is not traced: printed field by field, the records
// it applied equalled their decoded bytes then too.
func (r *replica) keepEncodedInTail(index uint64, e storage.Entry) {
	if !r.keepsTail() {
		return
	}
	rec, err := decodeRecord(e.Type, e.Body)
	if err != nil {
		panic(fmt.Sprintf("node: queue %s wrote record %d that does not decode: %v", r.name, index, err))
	}
	r.tail.add(index, rec)
}

// rollFromTail applies to the base s the records after it that the tail
// holds, through target and at most n of them, up to the latest of them
// whose history digest the log remembers (the end of a batch it
// appended): the base's digest then moves there without hashing the
// records. It reports how many it applied; zero leaves the roll to the
// log. Records past that batch end wait for the next roll, when a later
// batch end is confirmed.
func (r *replica) rollFromTail(s *queueState, target uint64, n int) int {
	recs, ok := r.tail.after(s.applied, target, n)
	if !ok {
		return 0
	}
	last, digest, known := r.log.LatestDigestThrough(s.applied + uint64(len(recs)))
	if !known || last <= s.applied {
		return 0
	}
	if last > r.log.LastIndex() {
		panic(fmt.Sprintf("node: queue %s tail holds record %d past its log's last %d", r.name, last, r.log.LastIndex()))
	}
	applied := int(last - s.applied)
	for _, rec := range recs[:applied] {
		s.apply(s.applied+1, rec)
	}
	r.ckptStateDigest = digest
	r.tail.dropThrough(last)
	r.rolled.fromTail += uint64(applied)
	return applied
}

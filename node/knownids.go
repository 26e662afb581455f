package node

import (
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// knownIDs holds the IDs a queue state remembers for deduplication: each
// ID published within the window, with its publish record's index, and
// each settled within it, with its settle record's. One map holds both,
// an entry per ID: a message published and settled inside the window
// costs one entry rather than one in each of two maps, and applying its
// publish misses the cache once, not once per map. A busy queue's window
// holds millions of IDs, far past any cache, so those misses were most of
// what a replica paid to apply a message to its checkpoint base.
type knownIDs struct {
	byID map[wire.MessageID]idIndexes
	// published and settled count the entries whose index of that kind
	// is set; peak is the most entries the map held since it was made.
	published, settled int
	peak               int
}

// idIndexes are the indexes of an ID's publish and settle records, each
// zero when not remembered. Log indexes start at 1, so zero is free.
type idIndexes struct{ published, settled uint64 }

func newKnownIDs(hint int) knownIDs {
	return knownIDs{byID: make(map[wire.MessageID]idIndexes, hint)}
}

// len is how many (ID, kind) pairs are remembered: what two sets, one of
// publishes and one of settles, would hold between them.
func (k *knownIDs) len() int { return k.published + k.settled }

// settleIndex is the index of id's remembered settle record.
func (k *knownIDs) settleIndex(id wire.MessageID) (uint64, bool) {
	e := k.byID[id]
	return e.settled, e.settled != 0
}

// lookup returns both of id's remembered indexes.
func (k *knownIDs) lookup(id wire.MessageID) (idIndexes, bool) {
	e, ok := k.byID[id]
	return e, ok
}

// note remembers index as id's publish (settled false) or settle record,
// replacing one remembered before.
func (k *knownIDs) note(id wire.MessageID, index uint64, settled bool) {
	if index == 0 {
		panic(fmt.Sprintf("node: ID %s remembered at log index 0", id))
	}
	e := k.byID[id]
	slot, count := &e.published, &k.published
	if settled {
		slot, count = &e.settled, &k.settled
	}
	if *slot == 0 {
		*count++
	}
	*slot = index
	k.byID[id] = e
}

// forget drops id's publish (settled false) or settle record if it is the
// one at index: a later record of the same ID, noted since, stays.
func (k *knownIDs) forget(id wire.MessageID, index uint64, settled bool) {
	e, ok := k.byID[id]
	if !ok {
		return
	}
	slot, count := &e.published, &k.published
	if settled {
		slot, count = &e.settled, &k.settled
	}
	if *slot != index {
		return
	}
	*slot = 0
	*count--
	if e == (idIndexes{}) {
		delete(k.byID, id)
		return
	}
	k.byID[id] = e
}

// sorted lists the IDs whose publish (settled false) or settle record is
// remembered, with its index, in ID order: the encoding's order.
func (k *knownIDs) sorted(settled bool) []idIndex {
	var out []idIndex
	for _, id := range slices.SortedFunc(maps.Keys(k.byID), compareIDs) {
		e := k.byID[id]
		index := e.published
		if settled {
			index = e.settled
		}
		if index != 0 {
			out = append(out, idIndex{id: id, index: index})
		}
	}
	return out
}

// idIndex is one remembered record: an ID and its record's index.
type idIndex struct {
	id    wire.MessageID
	index uint64
}

// ids lists the IDs of sorted(settled), without their indexes.
func (k *knownIDs) ids(settled bool) []wire.MessageID {
	pairs := k.sorted(settled)
	out := make([]wire.MessageID, len(pairs))
	for i, p := range pairs {
		out[i] = p.id
	}
	return out
}

// clone copies the map whole.
func (k *knownIDs) clone() knownIDs {
	c := *k
	c.byID = maps.Clone(k.byID)
	c.peak = len(c.byID)
	return c
}

// equal reports whether two sets remember the same records.
func (k *knownIDs) equal(o *knownIDs) bool { return maps.Equal(k.byID, o.byID) }

// shrink remakes the map at its present size once it holds under a
// quarter of its peak (mapPeaks says why).
func (k *knownIDs) shrink() { k.byID = shrunk(k.byID, &k.peak) }

package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/cairnmq/cairn/wire"
)

// knownIDs holds the IDs a queue state remembers for deduplication: each
// ID published within the window, with its publish record's index, and
// each settled within it, with its settle record's.
//
// It is laid out for the IDs clients make. A producer numbers its
// messages in order, so each producer's IDs are kept in a run: entries in
// increasing sequence order, appended at the end as new IDs come and
// dropped from the front as the window forgets them. A new publish's
// sequence is past the run's last, so deduplicating it reads the run's
// last entry; its ack finds its entry a few places back from the end;
// forgetting reads the front. All three touch memory used a moment
// before. A map of every ID held the same, but at a cache miss for nearly
// every publish and every forget once the window outgrew the cache (a
// busy queue's holds millions of IDs), and those misses were most of what
// a replica paid to apply a message to its checkpoint base.
//
// An ID that does not fit its producer's run (a sequence below the run's
// last that the run does not hold: a producer that reused or skipped
// back, or an ack of a message whose publish the window already forgot)
// goes to the producer's strays, a map.
type knownIDs struct {
	producers map[uint64]*producerIDs
	// published and settled count the IDs whose index of that kind is
	// set; peak is the most IDs held at once, by shrink's count.
	published, settled int
	peak               int
}

// idIndexes are the indexes of an ID's publish and settle records, each
// zero when not remembered. Log indexes start at 1, so zero is free.
type idIndexes struct{ published, settled uint64 }

// producerIDs are one producer's remembered IDs: run[head:] in increasing
// sequence order, some of them emptied (both indexes zero) and left in
// place until the front reaches them, and strays by sequence.
type producerIDs struct {
	run    []seqIndexes
	head   int
	strays map[uint64]idIndexes
}

// seqIndexes is one entry of a run.
type seqIndexes struct {
	seq uint64
	idIndexes
}

// runCompactMin is the fewest dropped entries at a run's front worth
// copying the rest down for.
const runCompactMin = 1024

func newKnownIDs() knownIDs {
	return knownIDs{producers: make(map[uint64]*producerIDs)}
}

// len is how many (ID, kind) pairs are remembered: what two sets, one of
// publishes and one of settles, would hold between them.
func (k *knownIDs) len() int { return k.published + k.settled }

// settleIndex is the index of id's remembered settle record.
func (k *knownIDs) settleIndex(id wire.MessageID) (uint64, bool) {
	e, _ := k.lookup(id)
	return e.settled, e.settled != 0
}

// lookup returns both of id's remembered indexes.
func (k *knownIDs) lookup(id wire.MessageID) (idIndexes, bool) {
	p := k.producers[id.Producer]
	if p == nil {
		return idIndexes{}, false
	}
	if i, ok := p.find(id.Seq); ok {
		e := p.run[i].idIndexes
		return e, e != idIndexes{}
	}
	e, ok := p.strays[id.Seq]
	return e, ok
}

// find returns the position in run of the entry for seq, if the run holds
// one. A run's sequences increase by at least one an entry, so seq lies
// at most seq-first entries past the front: that place is the first
// guess, exact while the producer numbered without gaps, and the search
// gallops back from there and ends in a binary search.
func (p *producerIDs) find(seq uint64) (int, bool) {
	live := p.run[p.head:]
	if len(live) == 0 || seq < live[0].seq || seq > live[len(live)-1].seq {
		return 0, false
	}
	guess := int(min(seq-live[0].seq, uint64(len(live)-1)))
	if live[guess].seq == seq {
		return p.head + guess, true
	}
	// seq's place, if the run holds it, is in live[lo:hi]: before the
	// guess, whose sequence is past seq.
	lo, hi := 0, guess
	for step := 1; guess-step >= 0; step *= 2 {
		j := guess - step
		if live[j].seq <= seq {
			lo = j
			break
		}
		hi = j
	}
	i, ok := slices.BinarySearchFunc(live[lo:hi], seq, func(e seqIndexes, s uint64) int { return cmp.Compare(e.seq, s) })
	return p.head + lo + i, ok
}

// note remembers index as id's publish (settled false) or settle record,
// replacing one remembered before.
func (k *knownIDs) note(id wire.MessageID, index uint64, settled bool) {
	if index == 0 {
		panic(fmt.Sprintf("node: ID %s remembered at log index 0", id))
	}
	p := k.producers[id.Producer]
	if p == nil {
		p = &producerIDs{}
		k.producers[id.Producer] = p
	}
	var e *idIndexes
	stray := false
	if i, ok := p.find(id.Seq); ok {
		e = &p.run[i].idIndexes
	} else if s, ok := p.strays[id.Seq]; ok {
		e, stray = &s, true
	} else if n := len(p.run); n == p.head || id.Seq > p.run[n-1].seq {
		p.run = append(p.run, seqIndexes{seq: id.Seq})
		e = &p.run[n].idIndexes
	} else {
		e, stray = &idIndexes{}, true
	}
	slot, count := &e.published, &k.published
	if settled {
		slot, count = &e.settled, &k.settled
	}
	if *slot == 0 {
		*count++
	}
	*slot = index
	if stray {
		if p.strays == nil {
			p.strays = make(map[uint64]idIndexes)
		}
		p.strays[id.Seq] = *e
	}
}

// forget drops id's publish (settled false) or settle record if it is the
// one at index: a later record of the same ID, noted since, stays.
func (k *knownIDs) forget(id wire.MessageID, index uint64, settled bool) {
	p := k.producers[id.Producer]
	if p == nil {
		return
	}
	i, inRun := p.find(id.Seq)
	var e idIndexes
	if inRun {
		e = p.run[i].idIndexes
	} else if s, ok := p.strays[id.Seq]; ok {
		e = s
	} else {
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
	switch {
	case inRun:
		p.run[i].idIndexes = e
		p.dropFront()
	case e == idIndexes{}:
		delete(p.strays, id.Seq)
	default:
		p.strays[id.Seq] = e
	}
	if len(p.run) == p.head && len(p.strays) == 0 {
		delete(k.producers, id.Producer)
	}
}

// dropFront drops the emptied entries at the run's front, and copies the
// rest down once the dropped ones are many and most of the slice.
func (p *producerIDs) dropFront() {
	for p.head < len(p.run) && p.run[p.head].idIndexes == (idIndexes{}) {
		p.head++
	}
	if p.head == len(p.run) {
		p.run, p.head = p.run[:0], 0
		return
	}
	if p.head >= runCompactMin && p.head >= len(p.run)/2 {
		p.run, p.head = slices.Clone(p.run[p.head:]), 0
	}
}

// sorted lists the IDs whose publish (settled false) or settle record is
// remembered, with its index, in ID order: the encoding's order.
func (k *knownIDs) sorted(settled bool) []idIndex {
	var out []idIndex
	add := func(producer, seq uint64, e idIndexes) {
		index := e.published
		if settled {
			index = e.settled
		}
		if index != 0 {
			out = append(out, idIndex{id: wire.MessageID{Producer: producer, Seq: seq}, index: index})
		}
	}
	for _, producer := range slices.Sorted(maps.Keys(k.producers)) {
		p := k.producers[producer]
		from := len(out)
		for _, e := range p.run[p.head:] {
			add(producer, e.seq, e.idIndexes)
		}
		if len(p.strays) == 0 {
			continue
		}
		for _, seq := range slices.Sorted(maps.Keys(p.strays)) {
			add(producer, seq, p.strays[seq])
		}
		slices.SortFunc(out[from:], func(a, b idIndex) int { return cmp.Compare(a.id.Seq, b.id.Seq) })
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

// clone copies every producer's run and strays.
func (k *knownIDs) clone() knownIDs {
	c := *k
	c.producers = make(map[uint64]*producerIDs, len(k.producers))
	for _, producer := range slices.Sorted(maps.Keys(k.producers)) {
		p := k.producers[producer]
		c.producers[producer] = &producerIDs{run: slices.Clone(p.run[p.head:]), strays: maps.Clone(p.strays)}
	}
	c.peak = c.len()
	return c
}

// equal reports whether two sets remember the same records.
func (k *knownIDs) equal(o *knownIDs) bool {
	if k.published != o.published || k.settled != o.settled {
		return false
	}
	// With as many records on each side, o holds nothing k lacks once it
	// holds everything k does.
	for _, producer := range slices.Sorted(maps.Keys(k.producers)) {
		p := k.producers[producer]
		for _, e := range p.run[p.head:] {
			if got, _ := o.lookup(wire.MessageID{Producer: producer, Seq: e.seq}); got != e.idIndexes {
				return false
			}
		}
		for _, seq := range slices.Sorted(maps.Keys(p.strays)) {
			if got, _ := o.lookup(wire.MessageID{Producer: producer, Seq: seq}); got != p.strays[seq] {
				return false
			}
		}
	}
	return true
}

// shrink gives back the room of a window that held far more than it does
// now (mapPeaks says why): runs shed their front as they go (dropFront),
// but a slice keeps its capacity, and the strays are a map. Once the set
// holds under a quarter of its peak, every run and stray map is remade at
// its size.
func (k *knownIDs) shrink() {
	n := k.len()
	k.peak = max(k.peak, n)
	if k.peak < mapShrinkMin || n >= k.peak/4 {
		return
	}
	for _, producer := range slices.Sorted(maps.Keys(k.producers)) {
		p := k.producers[producer]
		p.run, p.head = slices.Clone(p.run[p.head:]), 0
		if p.strays != nil {
			p.strays = maps.Clone(p.strays)
		}
	}
	k.peak = n
}

package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"

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
//
// A run is kept in fixed blocks, not one slice: a slice grown by append
// copies itself whole at each doubling, and a busy producer's run of a
// million entries or more then held its replica's loop for 24-80 ms
// (an allocation that size also pays for its share of the garbage
// collector's marking), on every replica at once, since all apply the
// same records: at 17,000 msg/s pipelined publishes waited 200-400 ms.
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

// producerIDs are one producer's remembered IDs: a run of entries in
// increasing sequence order, some of them emptied (both indexes zero) and
// left in place until the front reaches them, and strays by sequence. The
// run's entries are the blocks' from head on; every block but the last
// holds runBlockLen entries.
type producerIDs struct {
	blocks [][]seqIndexes
	head   int // entries dropped from the front of blocks[0]
	n      int // entries in the run
	strays map[uint64]idIndexes
}

// seqIndexes is one entry of a run.
type seqIndexes struct {
	seq uint64
	idIndexes
}

// runBlockShift sets the entries of a run's block: runBlockLen, 24 KiB.
const (
	runBlockShift = 10
	runBlockLen   = 1 << runBlockShift
)

// at is the run's i-th entry.
func (p *producerIDs) at(i int) *seqIndexes {
	j := p.head + i
	return &p.blocks[j>>runBlockShift][j&(runBlockLen-1)]
}

// push adds e at the run's end. A first block starts small and grows, so
// that a producer of a few IDs does not hold a whole block.
func (p *producerIDs) push(e seqIndexes) {
	last := len(p.blocks) - 1
	if last < 0 || len(p.blocks[last]) == runBlockLen {
		size := runBlockLen
		if last < 0 {
			size = 8
		}
		p.blocks = append(p.blocks, make([]seqIndexes, 0, size))
		last++
	}
	// Only a first block can be full before runBlockLen, and append
	// grows it: a copy of at most a block.
	p.blocks[last] = append(p.blocks[last], e)
	p.n++
}

// entries yields the run's entries in order.
func (p *producerIDs) entries(yield func(seqIndexes) bool) {
	for i := range p.n {
		if !yield(*p.at(i)) {
			return
		}
	}
}

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
		e := p.at(i).idIndexes
		return e, e != idIndexes{}
	}
	e, ok := p.strays[id.Seq]
	return e, ok
}

// find returns the position in the run of the entry for seq, if the run
// holds one. A run's sequences increase by at least one an entry, so seq
// lies at most seq-first entries past the front: that place is the first
// guess, exact while the producer numbered without gaps, and the search
// gallops back from there and ends in a binary search.
func (p *producerIDs) find(seq uint64) (int, bool) {
	if p.n == 0 || seq < p.at(0).seq || seq > p.at(p.n-1).seq {
		return 0, false
	}
	guess := int(min(seq-p.at(0).seq, uint64(p.n-1)))
	if p.at(guess).seq == seq {
		return guess, true
	}
	// seq's place, if the run holds it, is in [lo, hi): before the guess,
	// whose sequence is past seq.
	lo, hi := 0, guess
	for step := 1; guess-step >= 0; step *= 2 {
		j := guess - step
		if p.at(j).seq <= seq {
			lo = j
			break
		}
		hi = j
	}
	i := lo + sort.Search(hi-lo, func(k int) bool { return p.at(lo+k).seq >= seq })
	return i, i < hi && p.at(i).seq == seq
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
		e = &p.at(i).idIndexes
	} else if s, ok := p.strays[id.Seq]; ok {
		e, stray = &s, true
	} else if p.n == 0 || id.Seq > p.at(p.n-1).seq {
		p.push(seqIndexes{seq: id.Seq})
		e = &p.at(p.n - 1).idIndexes
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
		e = p.at(i).idIndexes
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
		p.at(i).idIndexes = e
		p.dropFront()
	case e == idIndexes{}:
		delete(p.strays, id.Seq)
	default:
		p.strays[id.Seq] = e
	}
	if p.n == 0 && len(p.strays) == 0 {
		delete(k.producers, id.Producer)
	}
}

// dropFront drops the emptied entries at the run's front, and with them
// every block they emptied.
func (p *producerIDs) dropFront() {
	for p.n > 0 && p.at(0).idIndexes == (idIndexes{}) {
		p.head++
		p.n--
		if p.head == runBlockLen {
			p.blocks[0] = nil
			p.blocks, p.head = p.blocks[1:], 0
		}
	}
	if p.n == 0 {
		p.blocks, p.head = nil, 0
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
		for e := range p.entries {
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
		blocks := make([][]seqIndexes, len(p.blocks))
		for i, b := range p.blocks {
			blocks[i] = slices.Clone(b)
		}
		c.producers[producer] = &producerIDs{blocks: blocks, head: p.head, n: p.n, strays: maps.Clone(p.strays)}
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
		for e := range p.entries {
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
// now (mapPeaks says why): runs let their blocks go as their front
// passes them, but the list of blocks keeps its capacity, and the strays
// are a map. Once the set holds under a quarter of its peak, every list
// of blocks and every stray map is remade at its size.
func (k *knownIDs) shrink() {
	n := k.len()
	k.peak = max(k.peak, n)
	if k.peak < mapShrinkMin || n >= k.peak/4 {
		return
	}
	for _, producer := range slices.Sorted(maps.Keys(k.producers)) {
		p := k.producers[producer]
		p.blocks = slices.Clone(p.blocks)
		if p.strays != nil {
			p.strays = maps.Clone(p.strays)
		}
	}
	k.peak = n
}

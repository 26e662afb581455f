package node

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"iter"

	"github.com/cairnmq/cairn/bugs"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The window journal keeps a checkpoint's deduplication window out of the
// checkpoint file. A busy queue remembers every ID it saw in the last two
// minutes, which at a few thousand messages a second is tens of megabytes:
// rewriting that whole list at every checkpoint cost as much disk
// bandwidth as the log itself. Instead each build appends to a small log
// of its own only the entries added since the previous cut, and the
// checkpoint file names the range of entries (by their running number,
// recentBase) that make up its window, plus their multiset digest. Whole
// journal segments whose entries have all left the window are dropped as
// the log's are.
//
// Crash safety follows from the order of writes: a build's entries are
// durable in the journal before the checkpoint file that names them is
// written, and the journal is only ever reset while the checkpoint on
// disk does not name it (it holds its window inline: it was installed
// from another replica, or written before the journal existed). Entries a
// crash left after the named range are cut away when the journal is
// opened, so every build appends right after the range it knows.

// journalDir names the window journal's log directory in a replica
// directory.
const journalDir = "window"

// recordWindowBatch is the journal's one record type: a run of window
// entries with the running number of the first. It shares no log with the
// queue's records, but its number is distinct all the same.
const recordWindowBatch storage.RecordType = 32

// journalEntrySize is one entry's encoded size: ID, index, stamp, kind.
const journalEntrySize = 8 + 8 + 8 + 8 + 1

// journalSegmentMax bounds a journal segment, so whole segments leave the
// window often; the queue log's segment size applies when it is smaller.
const journalSegmentMax = 8 << 20

// journalBatchEntries bounds the entries of one record.
const journalBatchEntries = 32 << 10

// windowSum is a multiset digest of window entries: the sum, lane by
// lane, of a hash of each. It is updated as entries come and go, so a
// checkpoint vouches for a window of a million entries without hashing
// them again, and the same entries give the same sum in any order.
type windowSum [2]uint64

func (w *windowSum) add(e recentID) {
	h := hashRecent(e)
	w[0] += h[0]
	w[1] += h[1]
}

func (w *windowSum) remove(e recentID) {
	h := hashRecent(e)
	w[0] -= h[0]
	w[1] -= h[1]
}

// hashRecent hashes an entry twice, with independent seeds: it guards
// against divergence between replicas' windows, not against an adversary,
// so a fast mixer serves.
func hashRecent(e recentID) [2]uint64 {
	settled := uint64(0)
	if e.settled() {
		settled = 1
	}
	words := [5]uint64{e.id.Producer, e.id.Seq, e.index(), uint64(e.at), settled}
	// The two lanes advance side by side: neither waits on the other, so
	// the processor overlaps their multiplications. Hashed one lane after
	// the other, this took a fifth of applying a record to a checkpoint
	// base; the result is the same either way.
	h0, h1 := uint64(0x243f6a8885a308d3), uint64(0x13198a2e03707344)
	for _, w := range words {
		h0, h1 = mix64(h0^w), mix64(h1^w)
	}
	return [2]uint64{h0, h1}
}

// mix64 is the splitmix64 finaliser.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// journalBatch is one record of the journal: entries from, from+1, ...
type journalBatch struct {
	index uint64 // its log index
	from  uint64
	n     int
}

func (b journalBatch) end() uint64 { return b.from + uint64(b.n) }

// windowJournal is a replica's open journal.
type windowJournal struct {
	log     *storage.Log
	batches []journalBatch // retained, in log order
	// wait is a log index a build waits to see durable before it writes
	// its checkpoint, and then what it does; zero when none waits.
	wait     uint64
	waitDone func()
}

// end is the running number after the journal's last entry, or zero for
// an empty journal.
func (j *windowJournal) end() uint64 {
	if len(j.batches) == 0 {
		return 0
	}
	return j.batches[len(j.batches)-1].end()
}

func encodeBatch(from uint64, entries []recentID) []byte {
	b := make([]byte, 0, 12+journalEntrySize*len(entries))
	b = wire.AppendUint64(b, from)
	b = wire.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = appendRecent(b, e)
	}
	return b
}

// decodeBatch decodes a journal record; the entries only when keep is set.
func decodeBatch(body []byte, keep bool) (from uint64, n int, entries []recentID, err error) {
	d := wire.NewDecoder(body)
	from = d.Uint64()
	n = d.Count(journalEntrySize)
	if keep {
		entries = make([]recentID, 0, n)
	}
	for range n {
		e, err := decodeRecent(d)
		if err != nil {
			return from, n, nil, err
		}
		if keep {
			entries = append(entries, e)
		}
	}
	return from, n, entries, d.Finish()
}

// journalSegmentSize is the journal's segment size for a queue log
// segment size (zero: the log's default, which is larger).
func journalSegmentSize(logSegment int64) int64 {
	if logSegment <= 0 {
		return journalSegmentMax
	}
	return min(logSegment, journalSegmentMax)
}

// openJournal opens the journal in dir and lists its batches.
func openJournal(fs vfs.FS, dir string, host storage.Host, segmentSize int64, onFailed func(error)) (*windowJournal, error) {
	j := &windowJournal{}
	l, err := storage.Open(fs, fs.PathJoin(dir, journalDir), host, storage.Options{
		SegmentSize: journalSegmentSize(segmentSize),
		OnDurable:   j.onDurable,
		OnFailed:    onFailed,
	})
	if err != nil {
		return nil, err
	}
	j.log = l
	err = scanJournal(l, l.FirstIndex(), func(index uint64, body []byte) error {
		from, n, _, err := decodeBatch(body, false)
		if err != nil {
			return err
		}
		if end := j.end(); len(j.batches) > 0 && from < end {
			return fmt.Errorf("batch %d starts at entry %d, before the previous batch ends at %d", index, from, end)
		}
		j.batches = append(j.batches, journalBatch{index: index, from: from, n: n})
		return nil
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	return j, nil
}

// onDurable runs the build waiting for its entries once they are durable.
func (j *windowJournal) onDurable(index uint64) {
	if j.wait != 0 && index >= j.wait {
		done := j.waitDone
		j.wait, j.waitDone = 0, nil
		done()
	}
}

// scanJournal calls fn with every journal record from index from on. A
// record fn cannot make sense of is corruption; a read that fails is
// returned as the log reports it (an I/O error is not damage).
func scanJournal(l *storage.Log, from uint64, fn func(index uint64, body []byte) error) error {
	rd := l.NewReader(from)
	defer rd.Close()
	for {
		page, err := rd.Next(l.LastIndex(), pageRecords, pageBytes)
		if err != nil || len(page) == 0 {
			return err
		}
		for _, rec := range page {
			if rec.Type != recordWindowBatch {
				return fmt.Errorf("%w: window journal record %d has type %d", storage.ErrCorrupt, rec.Index, rec.Type)
			}
			if err := fn(rec.Index, rec.Body); errors.Is(err, errJournalDone) {
				return err
			} else if err != nil {
				return fmt.Errorf("%w: window journal record %d: %v", storage.ErrCorrupt, rec.Index, err)
			}
		}
	}
}

// trimTo cuts the batches after the one that ends at end, which a crash
// left behind a checkpoint that does not name them.
func (j *windowJournal) trimTo(end uint64) error {
	if j.end() == end {
		return nil
	}
	keep := len(j.batches)
	for keep > 0 && j.batches[keep-1].end() > end {
		keep--
	}
	if keep == 0 || j.batches[keep-1].end() != end {
		return fmt.Errorf("%w: window journal has no batch ending at entry %d", storage.ErrCorrupt, end)
	}
	if err := j.log.TruncateAfter(j.batches[keep-1].index); err != nil {
		return err
	}
	j.batches = j.batches[:keep]
	return nil
}

// read returns the count entries from running number from on, as a
// window list. Its blocks are made as the entries come, so each can be
// let go once its entries leave the window: read into one slice, a
// restarted replica's whole window stayed in memory until its newest
// entry was forgotten, up to a window's time after the restart (60 MB in
// cairn-bench history), beside the entries that came since.
func (j *windowJournal) read(from uint64, count int) (windowList, error) {
	var out windowList
	first := -1
	for i, b := range j.batches {
		if b.end() > from {
			first = i
			break
		}
	}
	if count == 0 {
		return out, nil
	}
	if first < 0 || j.batches[first].from > from {
		return windowList{}, fmt.Errorf("%w: window journal does not hold entry %d", storage.ErrCorrupt, from)
	}
	next := from
	err := scanJournal(j.log, j.batches[first].index, func(index uint64, body []byte) error {
		if out.len() == count {
			return errJournalDone
		}
		b0, _, entries, err := decodeBatch(body, true)
		if err != nil {
			return err
		}
		if b0 > next {
			return fmt.Errorf("entries %d to %d are missing", next, b0)
		}
		skip := int(next - b0)
		take := entries[min(skip, len(entries)):]
		take = take[:min(len(take), count-out.len())]
		for _, e := range take {
			out.push(e)
		}
		next += uint64(len(take))
		return nil
	})
	if err != nil && !errors.Is(err, errJournalDone) {
		return windowList{}, err
	}
	if out.len() != count {
		return windowList{}, fmt.Errorf("%w: window journal holds %d of %d entries from %d", storage.ErrCorrupt, out.len(), count, from)
	}
	return out, nil
}

var errJournalDone = errors.New("journal read complete")

// appendEntries appends entries numbered from on, in records of at most
// journalBatchEntries, and returns the last record's index (zero when
// there was nothing to append).
func (j *windowJournal) appendEntries(from uint64, entries iter.Seq[recentID]) (uint64, error) {
	var last uint64
	// The batch grows with what is appended: most calls append a few
	// hundred entries, and a full record's worth up front would be a
	// megabyte cleared on every checkpoint.
	var batch []recentID
	write := func() error {
		index, err := j.log.Append(recordWindowBatch, encodeBatch(from, batch))
		if err != nil {
			return err
		}
		j.batches = append(j.batches, journalBatch{index: index, from: from, n: len(batch)})
		last, from, batch = index, from+uint64(len(batch)), batch[:0]
		return nil
	}
	for e := range entries {
		batch = append(batch, e)
		if len(batch) == journalBatchEntries {
			if err := write(); err != nil {
				return 0, err
			}
		}
	}
	if len(batch) > 0 {
		if err := write(); err != nil {
			return 0, err
		}
	}
	return last, nil
}

// dropBefore drops whole segments whose entries all come before entry
// from, as compaction does for the log.
func (j *windowJournal) dropBefore(from uint64) error {
	keep := 0
	for keep < len(j.batches)-1 && j.batches[keep].end() <= from {
		keep++
	}
	if keep == 0 {
		return nil
	}
	index := j.batches[keep].index
	if !j.log.CanTruncateFront(index) {
		j.log.SyncFront(index)
		return nil
	}
	if err := j.log.TruncateFront(index); err != nil {
		return err
	}
	first := j.log.FirstIndex()
	for len(j.batches) > 0 && j.batches[0].index < first {
		j.batches = j.batches[1:]
	}
	return nil
}

// removeJournal deletes a journal directory no checkpoint names.
func removeJournal(fs vfs.FS, dir string) error {
	path := fs.PathJoin(dir, journalDir)
	if _, err := fs.Stat(path); errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err := fs.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// journalWindow makes the window of s, a build's state at its cut,
// durable in the journal, then calls done: the checkpoint file that names
// it may be written. Only the entries after the journal's end are
// appended; a journal the current checkpoint does not name starts afresh
// with the whole window. No other checkpoint write starts meanwhile.
//
// The entries go in steps of Config.JournalStepEntries (4,096 by
// default: a few milliseconds of the loop, and at 50 steps a second far
// more entries than any queue adds to its window), one now and one each
// tick after (stepJournal): a queue at 5,000 msg/s piles up tens of
// thousands of entries between checkpoints, and appending them in one
// go held the node's loop for 50 ms, and every request behind it.
func (r *replica) journalWindow(s *queueState, done func()) {
	r.ckptBusy = true
	if !r.ckpt.journaled || r.journal == nil {
		if err := r.resetJournal(); err != nil {
			r.n.env.Halt(fmt.Sprintf("queue %s: starting its window journal: %v", r.name, err))
			return
		}
	}
	j := r.journal
	from := s.recentBase
	if end := j.end(); len(j.batches) > 0 {
		if end > s.recentBase+uint64(s.recent.len()) {
			panic(fmt.Sprintf("node: queue %s window journal ends at entry %d, outside the window %d+%d", r.name, end, s.recentBase, s.recent.len()))
		}
		from = max(from, end)
	}
	r.n.env.Boundary("checkpoint.before.append-window")
	r.journaling = &journalJob{window: s.recent.clone(), base: s.recentBase, from: from, done: done}
	r.stepJournal()
}

// journalJob is a window on its way into the journal: entries from on of
// window, whose first entry is entry base of the queue's window, are
// still to be appended; last is the journal index of the latest batch
// appended, zero while none was.
//
// The job holds a copy of the window as it was at the cut, not the state
// it came from: the copy shares the state's blocks (entries never change
// once pushed; pushes and drops touch only the state's own list), so it
// costs a slice of block pointers, and the state may go on rolling
// forward, or be handed to a new owner, while the journal is written.
// Holding the state itself kept the base still for as long as a window of
// tens of thousands of entries took to go in a step a tick; the base then
// caught up in steps of up to 16,384 records, 10-15 ms of the loop each
// (a trace of cairn-bench soak at 5,000 msg/s).
type journalJob struct {
	window windowList
	base   uint64
	from   uint64
	last   uint64
	done   func()
}

// stepJournal appends the next entries of the window under way, and once
// it is all appended, calls its done when the journal is durable up to
// it. A replica no longer present drops the job: its files are no one's
// concern now.
func (r *replica) stepJournal() {
	job := r.journaling
	if job == nil {
		return
	}
	if !r.present() {
		r.journaling = nil
		return
	}
	j := r.journal
	end := job.base + uint64(job.window.len())
	if n := min(end-job.from, uint64(r.n.cfg.JournalStepEntries)); n > 0 {
		last, err := j.appendEntries(job.from, firstN(job.window.from(int(job.from-job.base)), int(n)))
		if err != nil {
			r.journaling = nil
			return // the journal failed: the process is halting
		}
		job.from += n
		job.last = max(job.last, last)
	}
	if job.from < end {
		return // the next tick appends more
	}
	r.journaling = nil
	r.n.env.Boundary("checkpoint.after.append-window")
	if job.last == 0 || j.log.DurableIndex() >= job.last || bugs.Active(bugs.WindowJournalUnsynced) {
		job.done()
		return
	}
	j.wait, j.waitDone = job.last, func() {
		if r.journal == j {
			job.done()
		}
	}
	j.log.RequestSync()
}

// firstN yields the first n values of seq.
func firstN[T any](seq iter.Seq[T], n int) iter.Seq[T] {
	return func(yield func(T) bool) {
		if n <= 0 {
			return
		}
		i := 0
		for v := range seq {
			if !yield(v) {
				return
			}
			if i++; i == n {
				return
			}
		}
	}
}

// wireState is a journaled checkpoint in the form it travels in, with
// its window inline.
type wireState struct {
	cut   uint64
	state []byte
}

// checkpointWireState is the checkpoint's state as it travels: a
// journaled checkpoint is encoded once with its window inline, and kept
// until the next checkpoint replaces it. It is nil when the journal
// cannot be read, and the replica is then fenced.
func (r *replica) checkpointWireState() []byte {
	c := r.ckpt
	if !c.journaled {
		return c.state
	}
	if r.travelling.cut == c.cut {
		return r.travelling.state
	}
	s, err := r.baseState()
	if err != nil {
		r.readFailed(err)
		return nil
	}
	r.travelling = wireState{cut: c.cut, state: encodeState(s)}
	return r.travelling.state
}

package recovery_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cairnmq/cairn/node/recovery"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// TestRecoveryScripts runs the scripts under node/testdata/recovery. Each
// narrates one recovery attempt input by input, playing the driver: it
// says what the candidate's log holds, what the metadata says, what the
// other replicas answer and what came of each action, and each command's
// output is the list of actions the core returned, in order.
//
// Commands:
//
//	start self=N epoch=E seal-set=(..) [attempt=A] [inc=I] [history=H]
//	log last=L epoch=E digest=HEX [commit=C] [suspect] [grant-ago=D]
//	                                                     this replica's log and knowledge now
//	meta [policy=majority|all|owner-only] [lost=(..)] [members=(..)]
//	clock advance=DURATION                               both clocks move on
//	sealed                                               this replica's seal is durable
//	seal-reply from=N last=L epoch=E digest=HEX [suspect] [commit=C]
//	           [seal-epoch=E] [inc=I] [history=H] [grant-ago=D] | from=N refused seal-epoch=E owner=N
//	fetch-reply from=N prev=P entries=K [bytes=B] [epoch=E] [inc=I] | from=N refused hint=H last=L
//	checkpoint-offer from=N cut=C [epoch=E] [bytes=B]    the source's checkpoint, in place of pages
//	chunk from=N                                         a chunk of that checkpoint arrived
//	truncated last=L epoch=E digest=HEX                  the driver truncated
//	appended last=L epoch=E digest=HEX | appended err=TEXT
//	installed marker=M [durable=D]                       the driver appended the marker (followers reset)
//	progress [durable=D] [nK=HELD]...                    the log or a follower moved
//	activation-result ok | activation-result detail=TEXT
//	activated
//	tick [n=K]                                           K ticks (numbered from the start)
//	stop why=TEXT
//	state
func TestRecoveryScripts(t *testing.T) {
	datadriven.Walk(t, "../testdata/recovery", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

// harness plays the driver: it keeps the facts a node would read, and
// prints what the core returns.
type harness struct {
	core  *recovery.Core
	cfg   recovery.Config
	facts recovery.Facts
	held  map[uint32]uint64
	// ticks counts the attempt's ticks, for the tick command's output.
	ticks int
}

// base is the harness's clock origin; the lease clock starts at one
// second, as a node's monotonic clock would some time after boot.
var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "start":
		return h.start(t, d)
	case "log":
		h.setLog(t, d)
		return h.describeLog()
	case "meta":
		return h.meta(t, d)
	case "clock":
		var dur time.Duration
		d.ScanArgs(t, "advance", &dur)
		h.facts.Now = h.facts.Now.Add(dur)
		h.facts.LeaseClock += uint64(dur)
		return fmt.Sprintf("now +%v lease-clock=%v", h.facts.Now.Sub(base), time.Duration(h.facts.LeaseClock))
	case "state":
		return h.core.String()
	case "tick":
		return h.tick(t, d)
	}
	in := h.input(t, d)
	return render(h.core.Step(in))
}

// input builds the core input a command narrates.
func (h *harness) input(t *testing.T, d *datadriven.TestData) recovery.Input {
	switch d.Cmd {
	case "sealed":
		return recovery.Sealed{Facts: h.now()}
	case "seal-reply":
		return h.sealReply(t, d)
	case "fetch-reply":
		return h.fetchReply(t, d)
	case "checkpoint-offer":
		m := &wire.Checkpoint{Queue: h.cfg.Queue, Incarnation: h.cfg.Incarnation, Epoch: h.cfg.Epoch}
		var from uint32
		size := 10
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "cut", &m.Cut)
		d.MaybeScanArgs(t, "epoch", &m.Epoch)
		d.MaybeScanArgs(t, "bytes", &size)
		m.State = make([]byte, size)
		return recovery.CheckpointOffered{Facts: h.now(), From: from, Msg: m}
	case "chunk":
		var from uint32
		d.ScanArgs(t, "from", &from)
		return recovery.ChunkReceived{Facts: h.now(), From: from}
	case "truncated":
		h.setLog(t, d)
		return recovery.Truncated{Facts: h.now()}
	case "appended":
		if d.HasArg("err") {
			var text string
			d.ScanArgs(t, "err", &text)
			return recovery.PageAppended{Facts: h.now(), Err: errors.New(text)}
		}
		h.setLog(t, d)
		return recovery.PageAppended{Facts: h.now()}
	case "installed":
		var marker uint64
		d.ScanArgs(t, "marker", &marker)
		h.facts.Self.Last, h.facts.Self.LastEpoch = marker, h.cfg.Epoch
		d.MaybeScanArgs(t, "durable", &h.facts.Durable)
		// The driver probes every follower afresh from the marker.
		clear(h.held)
		return recovery.Installed{Facts: h.now(), Marker: marker}
	case "progress":
		h.progress(t, d)
		return recovery.Progress{Facts: h.now()}
	case "activation-result":
		var detail string
		d.MaybeScanArgs(t, "detail", &detail)
		return recovery.ActivationResult{OK: d.HasArg("ok"), Detail: detail}
	case "activated":
		return recovery.Activated{Facts: h.now(), Policy: h.facts.Policy}
	case "stop":
		var why string
		d.ScanArgs(t, "why", &why)
		return recovery.Stop{Why: why}
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return nil
}

func (h *harness) start(t *testing.T, d *datadriven.TestData) string {
	cfg := recovery.Config{Queue: "orders", Incarnation: 1, Attempt: 1, HistoryID: 7, DeliveryLease: 200 * time.Millisecond,
		Now: base, SyncBatches: 10}
	if h.core != nil {
		// A later start in the same script is a later attempt: time
		// has moved on, and the log is whatever the script said.
		cfg.Now = h.facts.Now
	}
	d.ScanArgs(t, "self", &cfg.Self)
	d.ScanArgs(t, "epoch", &cfg.Epoch)
	d.MaybeScanArgs(t, "attempt", &cfg.Attempt)
	d.MaybeScanArgs(t, "inc", &cfg.Incarnation)
	d.MaybeScanArgs(t, "history", &cfg.HistoryID)
	cfg.SealSet = nodes(t, d, "seal-set")
	if h.core == nil {
		h.facts = recovery.Facts{Now: base, LeaseClock: uint64(time.Second), Members: cfg.SealSet, SyncBatches: 10}
		h.facts.Self = recovery.Witness{Node: cfg.Self, First: 1, HistoryID: cfg.HistoryID, Process: 1}
		h.held = map[uint32]uint64{}
	}
	h.cfg = cfg
	h.core = recovery.New(cfg)
	h.ticks = 0
	return render(h.core.Start())
}

// setLog reads what this replica's log holds now.
func (h *harness) setLog(t *testing.T, d *datadriven.TestData) {
	s := &h.facts.Self
	d.ScanArgs(t, "last", &s.Last)
	d.ScanArgs(t, "epoch", &s.LastEpoch)
	s.Digest = digest(t, d)
	if d.Cmd == "log" {
		// A log command says everything the replica holds and knows;
		// a completion (truncated, appended) keeps what it does not say.
		s.Commit, s.Suspect = 0, d.HasArg("suspect")
	}
	d.MaybeScanArgs(t, "commit", &s.Commit)
	if d.HasArg("grant-ago") {
		s.LeaseGrantAgo = grantAgo(t, d)
	}
	h.facts.Durable = s.Last
}

// grantAgo reads grant-ago=DURATION, how long before its witness a
// replica last let an older owner renew its delivery lease (0 if absent).
func grantAgo(t *testing.T, d *datadriven.TestData) uint64 {
	if !d.HasArg("grant-ago") {
		return 0
	}
	var text string
	d.ScanArgs(t, "grant-ago", &text)
	ago, err := time.ParseDuration(text)
	if err != nil {
		t.Fatalf("grant-ago=%s: %v", text, err)
	}
	return uint64(ago)
}

func (h *harness) describeLog() string {
	s := h.facts.Self
	return fmt.Sprintf("n%d holds ..%d last-epoch=%d digest=%s commit=%d suspect=%t", s.Node, s.Last, s.LastEpoch, s.Digest, s.Commit, s.Suspect)
}

func (h *harness) meta(t *testing.T, d *datadriven.TestData) string {
	if d.HasArg("policy") {
		var name string
		d.ScanArgs(t, "policy", &name)
		p, err := wire.ParsePolicy(name)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		h.facts.Policy = p
	}
	if d.HasArg("lost") {
		h.facts.Lost = nodes(t, d, "lost")
	}
	if d.HasArg("members") {
		h.facts.Members = nodes(t, d, "members")
	}
	return fmt.Sprintf("policy=%s lost=%v members=%v", h.facts.Policy, h.facts.Lost, h.facts.Members)
}

func (h *harness) sealReply(t *testing.T, d *datadriven.TestData) recovery.Input {
	m := &wire.SealReply{Queue: h.cfg.Queue, Incarnation: h.cfg.Incarnation, Epoch: h.cfg.Epoch, HistoryID: h.cfg.HistoryID, Instance: 2}
	var from uint32
	d.ScanArgs(t, "from", &from)
	d.MaybeScanArgs(t, "seal-epoch", &m.Epoch)
	d.MaybeScanArgs(t, "inc", &m.Incarnation)
	if d.HasArg("refused") {
		d.ScanArgs(t, "owner", &m.Owner)
		return recovery.SealReply{Facts: h.now(), From: from, Msg: m}
	}
	m.OK, m.First = true, 1
	d.ScanArgs(t, "last", &m.Last)
	d.ScanArgs(t, "epoch", &m.LastEpoch)
	dg := digest(t, d)
	m.Digest = dg[:]
	d.MaybeScanArgs(t, "commit", &m.Commit)
	d.MaybeScanArgs(t, "history", &m.HistoryID)
	m.Suspect = d.HasArg("suspect")
	m.LeaseGrantAgo = grantAgo(t, d)
	return recovery.SealReply{Facts: h.now(), From: from, Msg: m}
}

func (h *harness) fetchReply(t *testing.T, d *datadriven.TestData) recovery.Input {
	m := &wire.FetchReply{Queue: h.cfg.Queue, Incarnation: h.cfg.Incarnation, Epoch: h.cfg.Epoch}
	var from uint32
	d.ScanArgs(t, "from", &from)
	d.MaybeScanArgs(t, "epoch", &m.Epoch)
	d.MaybeScanArgs(t, "inc", &m.Incarnation)
	if d.HasArg("refused") {
		d.ScanArgs(t, "hint", &m.Hint)
		d.ScanArgs(t, "last", &m.Last)
		return recovery.FetchReply{Facts: h.now(), From: from, Msg: m}
	}
	m.OK = true
	var entries, size int
	d.ScanArgs(t, "prev", &m.PrevIndex)
	d.ScanArgs(t, "entries", &entries)
	size = 10
	d.MaybeScanArgs(t, "bytes", &size)
	for range entries {
		m.Entries = append(m.Entries, wire.Entry{Type: 2, Body: make([]byte, size)})
	}
	return recovery.FetchReply{Facts: h.now(), From: from, Msg: m}
}

// progress reads the log's durable index and how far each follower
// holds the log (nK=HELD), then lists the followers in member order.
func (h *harness) progress(t *testing.T, d *datadriven.TestData) {
	d.MaybeScanArgs(t, "durable", &h.facts.Durable)
	for _, a := range d.CmdArgs {
		if id, ok := strings.CutPrefix(a.Key, "n"); ok {
			n, err := strconv.ParseUint(id, 10, 32)
			v, err2 := strconv.ParseUint(a.SingleVal(t), 10, 64)
			if err != nil || err2 != nil {
				d.Fatalf(t, "bad follower %s", a)
			}
			h.held[uint32(n)] = v
		}
	}
}

func (h *harness) tick(t *testing.T, d *datadriven.TestData) string {
	n := 1
	d.MaybeScanArgs(t, "n", &n)
	var b strings.Builder
	for range n {
		h.ticks++
		acts := h.core.Step(recovery.Tick{Facts: h.now()})
		if len(acts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "tick %d:\n%s\n", h.ticks, render(acts))
		if ends(acts) {
			// The driver drops an attempt that ended: no more ticks reach it.
			break
		}
	}
	if b.Len() == 0 {
		return "(nothing)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// now is the facts as the driver would read them at this moment.
func (h *harness) now() recovery.Facts {
	f := h.facts
	f.Followers = nil
	for _, m := range f.Members {
		if m != h.cfg.Self {
			f.Followers = append(f.Followers, recovery.Follower{Node: m, Held: h.held[m]})
		}
	}
	return f
}

// ends reports whether the actions end the attempt.
func ends(acts []recovery.Action) bool {
	for _, a := range acts {
		switch a.(type) {
		case recovery.Restart, recovery.Abandon, recovery.Stale:
			return true
		}
	}
	return false
}

func render(acts []recovery.Action) string {
	if len(acts) == 0 {
		return "(nothing)"
	}
	lines := make([]string, len(acts))
	for i, a := range acts {
		lines[i] = a.String()
	}
	return strings.Join(lines, "\n")
}

// nodes reads a list of node IDs; key=() is the empty list.
func nodes(t *testing.T, d *datadriven.TestData, key string) []uint32 {
	a, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing argument %s", key)
	}
	out := []uint32{}
	for _, v := range a.Vals {
		if v == "" {
			continue
		}
		id, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			d.Fatalf(t, "%s: %v", key, err)
		}
		out = append(out, uint32(id))
	}
	return out
}

// digest reads a digest written as a few hex digits, zero-padded.
func digest(t *testing.T, d *datadriven.TestData) storage.Digest {
	var s string
	d.ScanArgs(t, "digest", &s)
	b, err := hex.DecodeString(s)
	if err != nil {
		d.Fatalf(t, "digest %q: %v", s, err)
	}
	var dg storage.Digest
	copy(dg[:], b)
	return dg
}

package main

import (
	"strconv"
	"strings"
	"time"
)

// A timeline is the picture of one run, built from its trace as the run
// writes it: one lane per process, bands for periods (a node down,
// paused, owning a queue at an epoch, leading the metadata group,
// recovering a queue; a fault), marks for single events, and arrows for
// messages matched from their send to their receipt. It never holds the
// trace itself, so a long run costs memory in proportion to what is
// drawn, not to its length.
type timeline struct {
	laneIdx  map[string]int
	lanes    []string
	queueIdx map[string]int
	queues   []string
	bands    []band
	marks    []mark
	arrows   []arrow
	msgIdx   map[string]int
	msgNames []string
	// pending holds, per (sender, receiver, message) key, the arrows
	// waiting for their receipt, oldest first.
	pending map[string][]int
	// bulk and key count the arrows kept of each class, to cap them.
	bulk, key int
	density   map[densityKey][]int32
	open      map[openKey]int // band index of each open period
	leader    int             // band index of the open leader period, or -1
	leaderAt  string          // the lane of the last announced leader
	stageAt   map[openKey]int64
	ids       map[string][2]int64 // message id → first and last mention
	header    []string
	line      int
	now       int64
	liveAt    int64
}

// band is a period on one lane; Lane -1 spans every lane.
type band struct {
	Lane  int    `json:"l"`
	From  int64  `json:"a"`
	To    int64  `json:"b"`
	Kind  string `json:"k"`
	Queue int    `json:"q"`
	Epoch int    `json:"e,omitempty"`
	Label string `json:"s"`
	Line  int    `json:"n"`
}

// mark is one event on a lane.
type mark struct {
	Lane  int    `json:"l"`
	At    int64  `json:"t"`
	Label string `json:"s"`
	Line  int    `json:"n"`
}

// arrow is one message copy; a Recv of -1 means it never arrived.
type arrow struct {
	Send, Recv         int64
	From, To           int
	Class, Msg         int
	SendLine, RecvLine int
}

// Arrow classes, in the order the page names them.
const (
	classRequest = iota
	classReply
	classDelivery
	classRecovery
	classReplication
	classMetadata
	classHeartbeat
	classOther
)

// arrowClasses names the classes for the page.
var arrowClasses = []string{"request", "reply", "delivery", "recovery", "replication", "metadata", "heartbeat", "other"}

// Caps on what a page holds. Peer traffic (replication, raft,
// heartbeats) is always counted in the density strips; beyond its cap
// it is no longer drawn one arrow per message.
const (
	maxBulkArrows = 80_000
	maxKeyArrows  = 80_000
	maxMarks      = 20_000
	densityBin    = 5000 // microseconds
)

// densityKey names one density strip: a lane and what it counts.
type densityKey struct {
	lane int
	kind string
}

// openKey names an open period: its kind, lane and queue.
type openKey struct {
	kind  string
	lane  int
	queue int
}

func newTimeline() *timeline {
	tl := &timeline{
		laneIdx: map[string]int{}, queueIdx: map[string]int{}, msgIdx: map[string]int{},
		pending: map[string][]int{}, density: map[densityKey][]int32{}, open: map[openKey]int{},
		stageAt: map[openKey]int64{}, ids: map[string][2]int64{}, leader: -1, liveAt: -1,
	}
	tl.lane("sim")
	return tl
}

func (tl *timeline) lane(name string) int {
	if i, ok := tl.laneIdx[name]; ok {
		return i
	}
	tl.laneIdx[name] = len(tl.lanes)
	tl.lanes = append(tl.lanes, name)
	return len(tl.lanes) - 1
}

func (tl *timeline) queue(name string) int {
	if name == "" {
		return -1
	}
	if i, ok := tl.queueIdx[name]; ok {
		return i
	}
	tl.queueIdx[name] = len(tl.queues)
	tl.queues = append(tl.queues, name)
	return len(tl.queues) - 1
}

// add reads one trace line: "<seconds> <who> <text>".
func (tl *timeline) add(line string) {
	defer func() { tl.line++ }()
	s := strings.TrimLeft(line, " ")
	ts, rest, ok := strings.Cut(s, " ")
	if !ok {
		return
	}
	at, ok := parseMicros(ts)
	if !ok {
		return
	}
	tl.now = at
	who, text, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
	text = strings.TrimLeft(text, " ")
	tl.noteIDs(text)
	if who == "sim" {
		tl.addSim(text)
		return
	}
	l := tl.lane(who)
	verb, args, _ := strings.Cut(text, " ")
	switch verb {
	case "send":
		tl.addSend(l, args, "to=")
	case "reply":
		tl.addSend(l, args, "conn=")
	case "recv":
		tl.addRecv(l, args, "from=")
	case "client":
		tl.addRecv(l, args, "conn=")
	case "emit":
		tl.addEmit(l, args)
	default:
		tl.addProcess(l, verb, text)
	}
}

// parseMicros reads "%.6f" seconds as whole microseconds, exactly.
func parseMicros(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, false
	}
	frac = (frac + "000000")[:6]
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return w*1_000_000 + f, true
}

// noteIDs records the first and last mention of every message id
// ("id=p1.2", or a client's "done publish p1.2") on the line, so a
// violation naming one can link to it.
func (tl *timeline) noteIDs(text string) {
	if rest, ok := strings.CutPrefix(text, "done "); ok {
		if f := strings.Fields(rest); len(f) > 1 {
			tl.noteID(f[1])
		}
	}
	for {
		i := strings.Index(text, "id=p")
		if i < 0 {
			return
		}
		text = text[i+3:]
		end := strings.IndexAny(text, " }),")
		if end < 0 {
			end = len(text)
		}
		tl.noteID(text[:end])
	}
}

func (tl *timeline) noteID(id string) {
	span, seen := tl.ids[id]
	if !seen {
		span[0] = tl.now
	}
	span[1] = tl.now
	tl.ids[id] = span
}

// addProcess reads the lines a process writes about itself.
func (tl *timeline) addProcess(l int, verb, text string) {
	switch verb {
	case "crash":
		tl.closeLane(l, "crashed")
		tl.openBand(openKey{"down", l, -1}, -1, 0, "down "+strings.TrimPrefix(text, "crash "))
		tl.addMark(l, text)
	case "start":
		tl.closeBand(openKey{"down", l, -1}, "")
		tl.addMark(l, text)
	case "pause":
		tl.openBand(openKey{"pause", l, -1}, -1, 0, "paused")
		tl.addMark(l, text)
	case "resume":
		tl.closeBand(openKey{"pause", l, -1}, "")
		tl.addMark(l, text)
	case "synced":
		tl.count(l, "disk")
		if !strings.HasSuffix(text, "err=<nil>") {
			tl.addMark(l, "disk error: "+text)
		}
	case "done":
		tl.count(l, "ops")
		if !strings.HasSuffix(text, " ok status=ok") {
			tl.addMark(l, text)
		}
	case "timer":
	default:
		tl.addMark(l, text)
	}
}

// addMark records a mark, unless the page already holds too many.
func (tl *timeline) addMark(l int, text string) {
	if len(tl.marks) < maxMarks {
		tl.marks = append(tl.marks, mark{Lane: l, At: tl.now, Label: text, Line: tl.line})
	}
}

// count adds the current line to a density strip.
func (tl *timeline) count(l int, kind string) {
	k := densityKey{l, kind}
	bins := tl.density[k]
	bin := int(tl.now / densityBin)
	for len(bins) <= bin {
		bins = append(bins, 0)
	}
	bins[bin]++
	tl.density[k] = bins
}

// openBand starts a period, ending any open one under the same key.
func (tl *timeline) openBand(k openKey, queue, epoch int, label string) {
	tl.closeBand(k, "")
	tl.open[k] = len(tl.bands)
	tl.bands = append(tl.bands, band{Lane: k.lane, From: tl.now, To: -1, Kind: k.kind, Queue: queue, Epoch: epoch, Label: label, Line: tl.line})
}

// closeBand ends an open period, noting why when there is a reason.
func (tl *timeline) closeBand(k openKey, why string) {
	i, ok := tl.open[k]
	if !ok {
		return
	}
	delete(tl.open, k)
	tl.bands[i].To = tl.now
	if why != "" {
		tl.bands[i].Label += " (" + why + ")"
	}
}

// closeLane ends every period of a lane that a crash ends.
func (tl *timeline) closeLane(l int, why string) {
	for k := range tl.open {
		if k.lane == l && k.kind != "down" {
			tl.closeBand(k, why)
		}
	}
	if tl.leader >= 0 && tl.bands[tl.leader].Lane == l {
		tl.bands[tl.leader].To = tl.now
		tl.bands[tl.leader].Label += " (" + why + ")"
		tl.leader = -1
	}
}

// fields reads the key=value words of an event or fault; a value with
// spaces (a reason) keeps only its first word, which is enough here.
func fields(s string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Fields(s) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	return out
}

// parseDuration reads a Go duration, 0 when it is not one.
func parseDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0
	}
	return d
}

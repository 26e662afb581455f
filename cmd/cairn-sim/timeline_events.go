package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cairnmq/cairn/event"
)

// lostSuffixes end the send lines of messages that were never sent.
var lostSuffixes = []string{": peer down", ": node down", ": no such connection"}

// addSend reads "to=X MSG copies=K" (a send) or "conn=N to=X MSG
// copies=K" (a reply to a client) written by lane l.
func (tl *timeline) addSend(l int, args, first string) {
	if first == "conn=" {
		_, args, _ = strings.Cut(args, " ")
	}
	to, desc, ok := strings.Cut(args, " ")
	if !ok || !strings.HasPrefix(to, "to=") {
		tl.addMark(l, "reply lost: "+args)
		return
	}
	copies := 0
	lost := false
	for _, s := range lostSuffixes {
		if strings.HasSuffix(desc, s) {
			desc, lost = strings.TrimSuffix(desc, s), true
		}
	}
	if !lost {
		i := strings.LastIndex(desc, " copies=")
		if i < 0 {
			return
		}
		copies, _ = strconv.Atoi(desc[i+len(" copies="):])
		desc = desc[:i]
	}
	dst := tl.lane(strings.TrimPrefix(to, "to="))
	class, msg := tl.classify(desc)
	if bulkClass(class) {
		tl.count(l, "net")
	}
	if !tl.keep(class) {
		return
	}
	idx := len(tl.arrows)
	tl.arrows = append(tl.arrows, arrow{Send: tl.now, Recv: -1, From: l, To: dst, Class: class, Msg: msg, SendLine: tl.line, RecvLine: -1})
	key := pendingKey(l, dst, desc)
	for range copies {
		tl.pending[key] = append(tl.pending[key], idx)
	}
}

// addRecv reads "from=X MSG" (a receipt) or "conn=N from=X MSG" (a
// client's request arriving) on lane l, and completes the oldest arrow
// waiting for it.
func (tl *timeline) addRecv(l int, args, first string) {
	if first == "conn=" {
		_, args, _ = strings.Cut(args, " ")
	}
	from, desc, ok := strings.Cut(args, " ")
	if !ok || !strings.HasPrefix(from, "from=") {
		return
	}
	src := tl.lane(strings.TrimPrefix(from, "from="))
	class, _ := tl.classify(desc)
	if bulkClass(class) {
		tl.count(l, "net")
	}
	key := pendingKey(src, l, desc)
	waiting := tl.pending[key]
	if len(waiting) == 0 {
		return
	}
	if len(waiting) == 1 {
		delete(tl.pending, key)
	} else {
		tl.pending[key] = waiting[1:]
	}
	a := tl.arrows[waiting[0]]
	if a.Recv < 0 {
		tl.arrows[waiting[0]].Recv, tl.arrows[waiting[0]].RecvLine = tl.now, tl.line
		return
	}
	// A duplicated copy arrives: it becomes an arrow of its own.
	if tl.keep(class) {
		a.Recv, a.RecvLine = tl.now, tl.line
		tl.arrows = append(tl.arrows, a)
	}
}

func pendingKey(from, to int, desc string) string {
	return strconv.Itoa(from) + ">" + strconv.Itoa(to) + ">" + desc
}

// classify names a message's class and kind from its description,
// "Kind{fields}".
func (tl *timeline) classify(desc string) (class, msg int) {
	name, _, _ := strings.Cut(desc, "{")
	switch name {
	case "Publish", "Subscribe", "Settle", "CreateQueue", "DeleteQueue", "SetDetection":
		class = classRequest
	case "Reply":
		class = classReply
	case "Delivery":
		class = classDelivery
	case "Seal", "SealReply", "Fetch", "FetchReply":
		class = classRecovery
	case "Append", "AppendReply":
		class = classReplication
	case "Raft":
		class = classMetadata
	case "Ping", "Pong":
		class = classHeartbeat
	default:
		class = classOther
	}
	msg, ok := tl.msgIdx[name]
	if !ok {
		msg = len(tl.msgNames)
		tl.msgIdx[name] = msg
		tl.msgNames = append(tl.msgNames, name)
	}
	return class, msg
}

// bulkClass tells the classes of background peer traffic.
func bulkClass(class int) bool {
	return class == classReplication || class == classMetadata || class == classHeartbeat
}

// keep reports whether one more arrow of the class fits in the page,
// counting it if so.
func (tl *timeline) keep(class int) bool {
	if bulkClass(class) {
		tl.bulk++
		return tl.bulk <= maxBulkArrows
	}
	tl.key++
	return tl.key <= maxKeyArrows
}

// quietEvents are the per-record events of a queue: too many to mark,
// and the arrows already show the traffic behind them.
var quietEvents = map[event.Name]bool{event.QueueDurable: true, event.QueueReported: true, event.QueueCommit: true, event.QueueDeliver: true}

// addEmit reads a node event: some open or close periods, every one but
// the per-record ones is marked.
func (tl *timeline) addEmit(l int, args string) {
	e := event.Parse(args)
	if quietEvents[e.Name] {
		return
	}
	tl.addMark(l, args)
	q := tl.queue(e.Queue())
	epoch := int(e.Epoch())
	owner, rec := openKey{"owner", l, q}, openKey{"recovery", l, q}
	switch e.Name {
	case event.MetaLeader:
		if tl.leader >= 0 {
			tl.bands[tl.leader].To = tl.now
		}
		tl.leader, tl.leaderAt = len(tl.bands), tl.lanes[l]
		tl.bands = append(tl.bands, band{Lane: l, From: tl.now, To: -1, Kind: "leader", Queue: -1, Label: fmt.Sprintf("metadata leader, term %d", e.Term()), Line: tl.line})
	case event.QueueActive:
		tl.openBand(owner, q, epoch, fmt.Sprintf("owner of %s at epoch %d", e.Queue(), e.Epoch()))
	case event.QueueOwnerStopped, event.QueueStale, event.QueueFenced, event.QueueRetired:
		tl.closeBand(owner, string(e.Name))
	case event.RecoveryStart:
		tl.closeBand(rec, "restarted")
		tl.openBand(rec, q, epoch, fmt.Sprintf("recovery of %s to epoch %d, attempt %d", e.Queue(), e.Epoch(), e.Attempt()))
		tl.stageAt[rec] = tl.now
	case event.RecoveryStage:
		from, ok := tl.stageAt[rec]
		if !ok {
			from = tl.now
		}
		tl.stageAt[rec] = tl.now
		tl.bands = append(tl.bands, band{Lane: l, From: from, To: tl.now, Kind: "stage", Queue: q, Epoch: epoch, Label: e.Stage() + " " + e.Outcome(), Line: tl.line})
	case event.RecoveryDone:
		tl.closeBand(rec, "done")
		delete(tl.stageAt, rec)
	case event.RecoveryAbandoned:
		tl.closeBand(rec, "abandoned")
		delete(tl.stageAt, rec)
	}
}

// addSim reads the simulator's own lines: the run's header, faults,
// the liveness phase.
func (tl *timeline) addSim(text string) {
	verb, _, _ := strings.Cut(text, " ")
	switch verb {
	case "scenario", "swarm", "workload":
		tl.header = append(tl.header, text)
	case "fault":
		tl.addFault(strings.TrimPrefix(text, "fault "))
	case "liveness":
		tl.liveAt = tl.now
		tl.addMark(0, text)
	default:
		tl.addMark(0, text)
	}
}

// addFault draws one fault, "at=T KIND [nA[->nB]] [group=[..]] key=...",
// on the sim lane and on the lanes of the nodes it names.
func (tl *timeline) addFault(text string) {
	words := strings.Fields(text)
	if len(words) < 2 {
		return
	}
	label := strings.Join(words[1:], " ")
	lanes := []int{0}
	for _, w := range words[2:] {
		for _, n := range strings.Split(w, "->") {
			if len(n) > 1 && n[0] == 'n' && n[1] >= '0' && n[1] <= '9' {
				lanes = append(lanes, tl.lane(n))
			}
		}
	}
	if i := strings.Index(text, "group=["); i >= 0 {
		group, _, _ := strings.Cut(text[i+len("group=["):], "]")
		for _, g := range strings.Fields(group) {
			if x, err := strconv.Atoi(g); err == nil {
				lanes = append(lanes, tl.lane("n"+strconv.Itoa(x+1)))
			}
		}
	}
	if words[1] == "isolate-leader" && tl.leaderAt != "" {
		lanes = append(lanes, tl.lane(tl.leaderAt))
	}
	length := parseDuration(fields(text)["for"]).Microseconds()
	for _, l := range lanes {
		if length <= 0 {
			tl.addMark(l, "fault "+label)
			continue
		}
		tl.bands = append(tl.bands, band{Lane: l, From: tl.now, To: tl.now + length, Kind: "fault", Queue: -1, Label: label, Line: tl.line})
	}
}

// finish ends every open period at end and puts the lanes in display
// order: the simulator, nodes, clients, then anything else.
func (tl *timeline) finish(end int64) {
	end = max(end, tl.now)
	for k := range tl.open {
		tl.closeBand(k, "")
	}
	if tl.leader >= 0 {
		tl.bands[tl.leader].To = end
	}
	for i := range tl.bands {
		if tl.bands[i].To < 0 || tl.bands[i].To > end {
			tl.bands[i].To = end
		}
	}
	if tl.liveAt >= 0 {
		tl.bands = append(tl.bands, band{Lane: -1, From: tl.liveAt, To: end, Kind: "phase", Queue: -1, Label: "liveness phase: healed and calm"})
	}
	tl.now = end
	// Duplicated copies were appended late; the page wants send order.
	sort.SliceStable(tl.arrows, func(i, j int) bool { return tl.arrows[i].SendLine < tl.arrows[j].SendLine })
	tl.reorderLanes()
}

// laneRank orders lane names: sim, nodes by number, clients by number.
func laneRank(name string) (int, int) {
	if name == "sim" {
		return 0, 0
	}
	if len(name) > 1 && (name[0] == 'n' || name[0] == 'c') {
		if n, err := strconv.Atoi(name[1:]); err == nil {
			if name[0] == 'n' {
				return 1, n
			}
			return 2, n
		}
	}
	return 3, 0
}

func (tl *timeline) reorderLanes() {
	order := append([]string(nil), tl.lanes...)
	sort.SliceStable(order, func(i, j int) bool {
		gi, ni := laneRank(order[i])
		gj, nj := laneRank(order[j])
		if gi != gj {
			return gi < gj
		}
		if ni != nj {
			return ni < nj
		}
		return order[i] < order[j]
	})
	to := make([]int, len(order))
	for i, name := range order {
		to[tl.laneIdx[name]] = i
		tl.laneIdx[name] = i
	}
	tl.lanes = order
	for i := range tl.bands {
		if tl.bands[i].Lane >= 0 {
			tl.bands[i].Lane = to[tl.bands[i].Lane]
		}
	}
	for i := range tl.marks {
		tl.marks[i].Lane = to[tl.marks[i].Lane]
	}
	for i := range tl.arrows {
		tl.arrows[i].From, tl.arrows[i].To = to[tl.arrows[i].From], to[tl.arrows[i].To]
	}
	density := make(map[densityKey][]int32, len(tl.density))
	for k, v := range tl.density {
		density[densityKey{to[k.lane], k.kind}] = v
	}
	tl.density = density
}

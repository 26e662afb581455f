package main

import (
	"bufio"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/eventlog"
)

// The marks of a failover: instants, from the kill, that the survivors'
// logs record (and the client's first confirmed publish). Each is the
// earliest record of its event on any survivor at or after the kill.
const (
	markKill      = iota // the kill itself, at zero
	markReset            // detect.reset of the victim: its connection broke
	markSuspect          // detect.suspect of the victim
	markLeader           // meta.leader of another node: a new metadata leader
	markConfirm          // detect.confirm of the victim: confirmed down
	markPlan             // meta.plan-recovery of the queue from the victim, on the leader
	markNodeDown         // meta.node-down of the victim: the down mark applied
	markCandidate        // queue.role of the queue to candidate: the plan applied on the candidate
	markStart            // recovery.start of the queue
	markAdmit            // recovery.done of the queue: activated, it admits publishes
	markActive           // queue.active of the queue: it delivers too
	markHoldEnded        // queue.hold-ended of the queue: recovered messages delivered again
	markPublish          // the probe's first confirmed publish, from the client
	numMarks
)

// roleCandidate is the role a replica takes, as queue.role events and
// /status name it, when the metadata names its node the queue's next owner.
const roleCandidate = "candidate"

// markEvents names the event that records each mark, as the report
// prints it.
var markEvents = [numMarks]string{
	markKill:      "the fault",
	markReset:     "connection reset seen (detect.reset)",
	markSuspect:   "first suspicion (detect.suspect)",
	markLeader:    "new metadata leader (meta.leader)",
	markConfirm:   "owner confirmed down (detect.confirm)",
	markPlan:      "recovery planned by the leader (meta.plan-recovery)",
	markNodeDown:  "down mark applied (meta.node-down)",
	markCandidate: "plan applied by the candidate (queue.role to candidate)",
	markStart:     "recovery started (recovery.start)",
	markAdmit:     "new owner admits publishes (recovery.done)",
	markActive:    "new owner delivers (queue.active)",
	markHoldEnded: "recovered messages released for delivery (queue.hold-ended)",
	markPublish:   "first new confirmed publish (client)",
}

// stageTimes is one trial's failover as the survivors logged it.
type stageTimes struct {
	mark [numMarks]time.Duration
	seen [numMarks]bool
	// recovery holds, in the order first logged, the time each
	// recovery stage took as its recovery.stage events report it (in
	// microseconds), summed over the attempts; a stage that ended in a
	// retry is kept apart from the same stage ending well.
	recovery []stageSpan
	// total is the whole recovery attempt as recovery.done reports it.
	total     time.Duration
	totalSeen bool
	attempts  int // recovery.start events of the queue
}

// stageSpan is the time spent in one named recovery stage.
type stageSpan struct {
	name string
	took time.Duration
}

// set records mark i at d from the kill, keeping the earliest.
func (st *stageTimes) set(i int, d time.Duration) {
	if !st.seen[i] || d < st.mark[i] {
		st.mark[i], st.seen[i] = d, true
	}
}

// addStage adds d to the named recovery stage.
func (st *stageTimes) addStage(name string, d time.Duration) {
	for i := range st.recovery {
		if st.recovery[i].name == name {
			st.recovery[i].took += d
			return
		}
	}
	st.recovery = append(st.recovery, stageSpan{name: name, took: d})
}

// stageEvents are the events readStages looks at.
var stageEvents = []event.Name{
	event.DetectReset, event.DetectSuspect, event.MetaLeader, event.DetectConfirm, event.MetaPlanRecovery,
	event.MetaNodeDown, event.QueueRole, event.RecoveryStart, event.RecoveryStage, event.RecoveryDone, event.QueueActive,
	event.QueueHoldEnded,
}

// readStages reads the failover of queue after dead was failed at kill
// from the survivors' logs.
func readStages(logs []string, dead uint32, queue string, kill time.Time) (stageTimes, error) {
	var st stageTimes
	st.set(markKill, 0)
	since := kill.Truncate(time.Millisecond)
	for _, path := range logs {
		if err := scanStages(path, func(at time.Time, e event.Event) {
			if !at.Before(since) {
				st.note(at.Sub(since), e, dead, queue)
			}
		}); err != nil {
			return st, err
		}
	}
	return st, nil
}

// scanStages calls f with every event of stageEvents in the log at path.
// Lines that cannot hold one are passed over without parsing: a debug
// log of a large backlog runs to many megabytes.
func scanStages(path string, f func(time.Time, event.Event)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !mentionsAny(line, stageEvents) {
			continue
		}
		if at, e, ok := parseLogLine(line); ok {
			f(at, e)
		}
	}
	return sc.Err()
}

// mentionsAny reports whether line's message may be one of names.
func mentionsAny(line string, names []event.Name) bool {
	for _, n := range names {
		if strings.Contains(line, "msg="+string(n)) {
			return true
		}
	}
	return false
}

// note records what e says about the failover, d after the kill.
func (st *stageTimes) note(d time.Duration, e event.Event, dead uint32, queue string) {
	switch {
	case e.Name == event.DetectReset && e.Node() == dead:
		st.set(markReset, d)
	case e.Name == event.DetectSuspect && e.Node() == dead:
		st.set(markSuspect, d)
	case e.Name == event.MetaLeader && e.Node() != dead:
		st.set(markLeader, d)
	case e.Name == event.DetectConfirm && e.Node() == dead:
		st.set(markConfirm, d)
	case e.Name == event.MetaNodeDown && e.Node() == dead:
		st.set(markNodeDown, d)
	case e.Queue() != queue:
	case e.Name == event.MetaPlanRecovery && e.FromNode() == dead:
		st.set(markPlan, d)
	case e.Name == event.QueueRole && e.To() == roleCandidate:
		st.set(markCandidate, d)
	case e.Name == event.RecoveryStart:
		st.set(markStart, d)
		st.attempts++
	case e.Name == event.QueueActive:
		st.set(markActive, d)
	case e.Name == event.QueueHoldEnded:
		st.set(markHoldEnded, d)
	case e.Name == event.RecoveryStage:
		name := e.Stage()
		if o := e.Outcome(); o != "ok" {
			name += " (" + o + ")"
		}
		st.addStage(name, e.Elapsed())
	case e.Name == event.RecoveryDone:
		st.set(markAdmit, d)
		if !st.totalSeen {
			st.total, st.totalSeen = e.Elapsed(), true
		}
	}
}

// parseLogLine reads one line of a node's log (slog's text format) back
// into its time and event. The message is the event's name, and the
// attributes after it are the event's, except the first node=nN, which
// is the logging node's: the node's logger carries it on every line,
// before the event's own attributes, and an event may have a node
// attribute of its own (node=2), which must be the one its accessors
// find.
func parseLogLine(line string) (time.Time, event.Event, bool) {
	var at time.Time
	var e event.Event
	named, loggerNode := false, false
	for _, f := range eventlog.Fields(line) {
		switch {
		case !named && f[0] == "time":
			at, _ = time.Parse(time.RFC3339Nano, f[1])
		case !named && f[0] == "msg":
			e.Name, named = event.Name(f[1]), true
		case !named:
		case f[0] == string(event.KeyNode) && !loggerNode:
			loggerNode = true
		default:
			e.Attrs = append(e.Attrs, slog.String(f[0], f[1]))
		}
	}
	return at, e, named && !at.IsZero()
}

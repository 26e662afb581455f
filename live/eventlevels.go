package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairnmq/cairn/event"
)

// eventLevels are the node events an operator sees at the default log
// level: each marks a change in who serves what (a queue created or
// activated, a peer suspected or confirmed down, a metadata leader
// elected, a recovery or replacement planned, a replica replaced, or
// retired because its queue was deleted or it was replaced), a
// checkpoint the metadata certified (what replicas may now drop), or a
// defect the node found and refused to make worse, or a stall an operator
// should hear of (an owner whose followers stopped renewing its delivery
// lease in time stops delivering until they do). Every other event is
// logged at debug. The line's message is the event's name, as at debug,
// so tools that read logs back find it.
//
// A recovery this node ran is told at info by its summary line
// (recoveryLog), which carries everything recovery.done does and the
// stage breakdown besides, so recovery.done itself stays at debug rather
// than say the same thing twice.
var eventLevels = map[event.Name]slog.Level{
	event.QueueActive:            slog.LevelInfo,
	event.DetectSuspect:          slog.LevelInfo,
	event.DetectConfirm:          slog.LevelInfo,
	event.DetectFlapped:          slog.LevelInfo,
	event.MetaLeader:             slog.LevelInfo,
	event.MetaActivated:          slog.LevelInfo,
	event.MetaDeleted:            slog.LevelInfo,
	event.MetaPlanRecovery:       slog.LevelInfo,
	event.MetaPlanReplace:        slog.LevelInfo,
	event.MetaReplicaReplaced:    slog.LevelInfo,
	event.QueueRetired:           slog.LevelInfo,
	event.CheckpointCertified:    slog.LevelInfo,
	event.QueueFenced:            slog.LevelWarn,
	event.QueueRefusedTruncation: slog.LevelWarn,
	event.RecoveryUnsupported:    slog.LevelWarn,
	event.MetaCatchingUp:         slog.LevelWarn,
	event.MetaFollowerLostLog:    slog.LevelWarn,
	event.MetaCommitLearned:      slog.LevelInfo,
	event.NodeDiskFull:           slog.LevelWarn,
	event.NodeDiskOK:             slog.LevelInfo,
	event.CheckpointMismatch:     slog.LevelWarn,
	event.CheckpointRefused:      slog.LevelWarn,
	event.QueueLeaseLapsed:       slog.LevelWarn,
	event.QueueSubscriberQuiet:   slog.LevelInfo,
	event.QueueSubscriberHeard:   slog.LevelInfo,
	event.QueueQuorumLost:        slog.LevelWarn,
	event.QueueQuorumRegained:    slog.LevelInfo,
}

// Some of these repeat while their cause lasts (a refused truncation is
// asked again at every tick, a recovery that cannot finish is planned
// again): each name may log logBurst lines at once and one more every
// logEvery for each queue or node it is about, and the next line says
// how many were left out. Counted by name alone, one subject's repeats
// silenced another's first line: a node killed every 12 s in
// cairn-bench history left no detect.suspect line in 8 of 30 kills, the
// name's budget spent on suspicions of other nodes.
const (
	logBurst = 5
	logEvery = 10 * time.Second
	// logSubjectsMax bounds how many (name, subject) budgets are kept; past
	// it they all start over, which lets a few more lines through.
	logSubjectsMax = 4096
)

// limitKey is what a log budget is counted by: an event's name and the
// queue or node it is about.
type limitKey struct {
	name  event.Name
	queue string
	node  uint32
}

// limitKeyOf is ev's budget key.
func limitKeyOf(ev event.Event) limitKey {
	return limitKey{name: ev.Name, queue: ev.Queue(), node: ev.Node()}
}

// eventLogger is where the runtime hands every node event: it writes
// the event to the node's log at its level, derives the event metrics,
// and follows recoveries to sum each up in one line.
type eventLogger struct {
	log        *slog.Logger
	limits     map[limitKey]*logLimiter // made as subjects come
	metrics    *eventMetrics
	recoveries *recoveryLog
}

// newEventLogger returns an event logger writing to log, with fresh event
// instruments (the runtime's collector exposes them).
func newEventLogger(log *slog.Logger) *eventLogger {
	m := newEventMetrics()
	return &eventLogger{log: log, limits: make(map[limitKey]*logLimiter), metrics: m,
		recoveries: newRecoveryLog(log, m.recoverySeconds)}
}

// emit takes ev, stamped now with the runtime's clock. The metrics see
// every event, whatever the log level; the event's own line comes before
// the summary it may complete, so a debug log reads in order.
func (l *eventLogger) emit(now time.Time, ev event.Event) {
	l.metrics.observe(ev)
	l.logEvent(now, ev)
	l.recoveries.observe(now, ev)
}

// logEvent logs ev, if its level is enabled and its name is not over its
// rate.
func (l *eventLogger) logEvent(now time.Time, ev event.Event) {
	level, ok := eventLevels[ev.Name]
	if !ok {
		level = slog.LevelDebug
	}
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	attrs := ev.Attrs
	if _, limited := eventLevels[ev.Name]; limited {
		key := limitKeyOf(ev)
		lim := l.limits[key]
		if lim == nil {
			if len(l.limits) >= logSubjectsMax {
				clear(l.limits)
			}
			lim = newLogLimiter(logBurst, logEvery)
			l.limits[key] = lim
		}
		allowed, suppressed := lim.allow(now)
		if !allowed {
			return
		}
		if suppressed > 0 {
			attrs = append(attrs[:len(attrs):len(attrs)], slog.Int("suppressed", suppressed))
		}
	}
	l.log.LogAttrs(context.Background(), level, string(ev.Name), attrs...)
}

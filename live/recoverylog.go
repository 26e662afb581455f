package live

import (
	"container/list"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/prometheus/client_golang/prometheus"
)

// recoverySummaryMsg is the message of the one info line a node writes
// when a recovery it ran ends. It sums up several events rather than
// reporting one the node emitted, so it is deliberately not shaped like
// an event name (family.kind): a tool that reads the log back for events
// never takes it for one, and the repository's lint on event-name
// literals has nothing to flag. A test checks it collides with no event.
const recoverySummaryMsg = "recovery-summary"

// Bounds on what recoveryLog remembers. A node recovers few queues at
// once, but an operator creating thousands of queues on a node that then
// loses its peers must not make this table, or a summary line, grow
// without limit.
const (
	// maxTrackedRecoveries is how many queues' recoveries are followed at
	// once; starting one more forgets the one started longest ago.
	maxTrackedRecoveries = 1024
	// maxSummaryStages is how many stages a summary lists; a recovery
	// that retried past that says how many more stages it ran.
	maxSummaryStages = 32
)

// The outcomes a recovery attempt is labelled with, besides how a stage
// that ended it ended (stageRetry).
const (
	outcomeOK        = "ok"
	outcomeAbandoned = "abandoned"
	outcomeStale     = "stale"
	outcomeFenced    = "fenced"
	outcomeRetired   = "retired"
	// stageRetry is the outcome of a stage that ended its attempt, which
	// the node restarts from sealing in the same epoch.
	stageRetry = "retry"
)

// recoveryLog follows the recoveries this node runs, from their events,
// to time whole attempts (cairn_recovery_seconds) and to write one
// readable line per recovery with its stage breakdown. It is used only
// on the node's goroutine, as the events arrive, so it needs no lock.
//
// A recovery is one queue's move into one epoch: attempts of the same
// epoch are retries of it, and a start in a newer epoch replaces it. A
// run is forgotten when its recovery ends; one the node retried but did
// not start again (the metadata had moved the queue on) stays until a
// newer epoch or the table's bound pushes it out.
type recoveryLog struct {
	log     *slog.Logger
	seconds *prometheus.HistogramVec
	max     int
	// byQueue finds a queue's recovery in order, which lists them from
	// the least recently started attempt to the most.
	byQueue map[string]*list.Element
	order   *list.List
}

// recoveryRun is what recoveryLog remembers of one queue's recovery.
type recoveryRun struct {
	queue string
	epoch uint64
	// open says an attempt has started and not ended; attemptStart is
	// when, on the runtime's clock.
	open         bool
	attemptStart time.Time
	// took sums the durations of the attempts that ended; retries
	// counts those that ended in a retry.
	took    time.Duration
	retries int
	// stages lists the stages run so far, in order, up to
	// maxSummaryStages; omitted counts the rest.
	stages  []stageTime
	omitted int
}

// stageTime is one stage of a recovery as its summary lists it.
type stageTime struct {
	name, outcome string
	took          time.Duration
}

// newRecoveryLog returns a recoveryLog that writes summaries to log and
// observes attempt durations in seconds.
func newRecoveryLog(log *slog.Logger, seconds *prometheus.HistogramVec) *recoveryLog {
	return &recoveryLog{log: log, seconds: seconds, max: maxTrackedRecoveries,
		byQueue: make(map[string]*list.Element), order: list.New()}
}

// observe takes one node event, stamped with the runtime's clock. Go's
// time.Now carries a monotonic reading, and durations between two such
// stamps are measured on it, so a wall-clock jump does not distort an
// attempt measured here.
func (l *recoveryLog) observe(now time.Time, ev event.Event) {
	switch ev.Name {
	case event.RecoveryStart:
		l.start(now, ev)
	case event.RecoveryStage:
		l.stage(now, ev)
	case event.RecoveryDone:
		l.done(now, ev)
	case event.QueueActive:
		// The recovery core reports recovery.done before the queue
		// turns active, which ends the run; a run still open here ended
		// without its own report, and the activation is its success.
		if run := l.find(ev.Queue(), ev.Epoch()); run != nil && run.open {
			l.end(now, run, outcomeOK)
		}
	case event.RecoveryAbandoned:
		if run := l.find(ev.Queue(), ev.Epoch()); run != nil {
			l.end(now, run, outcomeAbandoned, slog.String(string(event.KeyWhy), ev.Why()))
		}
	case event.QueueStale:
		l.endQueue(now, ev.Queue(), outcomeStale)
	case event.QueueFenced:
		l.endQueue(now, ev.Queue(), outcomeFenced)
	case event.QueueRetired:
		l.endQueue(now, ev.Queue(), outcomeRetired)
	}
}

// start opens an attempt. A start in the epoch already followed is a
// retry: the previous attempt normally ended with a retry stage, and one
// that did not is counted as retried all the same, since the node began
// again. A start in an older epoch than the one followed is old news.
func (l *recoveryLog) start(now time.Time, ev event.Event) {
	q, epoch := ev.Queue(), ev.Epoch()
	run := l.run(q)
	switch {
	case run != nil && run.epoch > epoch:
		return
	case run != nil && run.epoch == epoch:
		if run.open {
			l.endAttempt(now, run, stageRetry)
			run.retries++
		}
		l.order.MoveToBack(l.byQueue[q])
	default:
		l.forget(q)
		run = l.track(&recoveryRun{queue: q, epoch: epoch})
	}
	run.open, run.attemptStart = true, now
}

// stage notes a stage of a followed recovery; a stage that ended in a
// retry ends its attempt.
func (l *recoveryLog) stage(now time.Time, ev event.Event) {
	run := l.find(ev.Queue(), ev.Epoch())
	if run == nil {
		return
	}
	if len(run.stages) < maxSummaryStages {
		run.stages = append(run.stages, stageTime{name: ev.Stage(), outcome: ev.Outcome(), took: ev.Elapsed()})
	} else {
		run.omitted++
	}
	if ev.Outcome() == stageRetry && run.open {
		l.endAttempt(now, run, stageRetry)
		run.retries++
	}
}

// done ends a recovery that succeeded. The event times its attempt on
// the node's own clock, which is preferred; without that attribute the
// attempt is timed from its start here. A recovery not followed (its
// start was forgotten to make room) is still summed up, without stages.
func (l *recoveryLog) done(now time.Time, ev event.Event) {
	run := l.find(ev.Queue(), ev.Epoch())
	if run == nil {
		run = &recoveryRun{queue: ev.Queue(), epoch: ev.Epoch()}
	}
	if ev.Attempt() > 0 {
		// The attempt's number is the node's own count of retries, which
		// holds even if some of a retry's events were not seen here.
		run.retries = ev.Attempt() - 1
	}
	if hasAttr(ev, event.KeyElapsed) {
		run.open = false
		run.took += ev.Elapsed()
		l.seconds.WithLabelValues(outcomeOK).Observe(ev.Elapsed().Seconds())
	} else {
		l.endAttempt(now, run, outcomeOK)
	}
	l.finish(run, outcomeOK,
		slog.Int(string(event.KeyRPCs), ev.RPCs()), slog.Int(string(event.KeyBytes), ev.Bytes()),
		slog.Uint64(string(event.KeySyncs), ev.Syncs()))
}

// endQueue ends q's recovery, if one is followed, because its replica
// stopped: whatever the epoch, this node's one replica of q can no
// longer carry the attempt on.
func (l *recoveryLog) endQueue(now time.Time, q, outcome string) {
	if run := l.run(q); run != nil {
		l.end(now, run, outcome)
	}
}

// end ends run with outcome, timing its open attempt up to now.
func (l *recoveryLog) end(now time.Time, run *recoveryRun, outcome string, more ...slog.Attr) {
	l.endAttempt(now, run, outcome)
	l.finish(run, outcome, more...)
}

// endAttempt closes run's open attempt at now, observes its duration
// labelled with outcome, and adds it to run's total. An attempt already
// closed (by a retry stage) is not counted twice.
func (l *recoveryLog) endAttempt(now time.Time, run *recoveryRun, outcome string) {
	if !run.open {
		return
	}
	run.open = false
	d := now.Sub(run.attemptStart).Round(time.Microsecond)
	l.seconds.WithLabelValues(outcome).Observe(d.Seconds())
	run.took += d
}

// finish writes run's summary, whose more attributes follow the common
// ones, and forgets run.
func (l *recoveryLog) finish(run *recoveryRun, outcome string, more ...slog.Attr) {
	l.forget(run.queue)
	if !l.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := append([]slog.Attr{
		slog.String(string(event.KeyQueue), run.queue),
		slog.Uint64(string(event.KeyEpoch), run.epoch),
		slog.String("took", formatDuration(run.took)),
		slog.String("stages", run.renderStages()),
		slog.String("outcome", outcome),
		slog.Int("retries", run.retries),
	}, more...)
	l.log.LogAttrs(context.Background(), slog.LevelInfo, recoverySummaryMsg, attrs...)
}

// ---- the table of followed recoveries.

// run returns q's followed recovery, whatever its epoch, or nil.
func (l *recoveryLog) run(q string) *recoveryRun {
	if el := l.byQueue[q]; el != nil {
		return el.Value.(*recoveryRun)
	}
	return nil
}

// find returns q's followed recovery if it is the one into epoch, or
// nil: events of an epoch this log no longer follows have no run to join.
func (l *recoveryLog) find(q string, epoch uint64) *recoveryRun {
	if run := l.run(q); run != nil && run.epoch == epoch {
		return run
	}
	return nil
}

// track starts following run, first forgetting the least recently
// started recovery if the table is full.
func (l *recoveryLog) track(run *recoveryRun) *recoveryRun {
	for l.order.Len() >= l.max {
		l.forget(l.order.Front().Value.(*recoveryRun).queue)
	}
	l.byQueue[run.queue] = l.order.PushBack(run)
	return run
}

// forget stops following q's recovery, if any.
func (l *recoveryLog) forget(q string) {
	if el := l.byQueue[q]; el != nil {
		l.order.Remove(el)
		delete(l.byQueue, q)
	}
}

// ---- rendering.

// renderStages lists the stages in the order they ran, as
// "seal=1.2ms fetch=0.3ms install=2.1ms"; a stage that did not end well
// carries its outcome, as "fetch=500ms(retry)".
func (run *recoveryRun) renderStages() string {
	var b strings.Builder
	for i, s := range run.stages {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.name)
		b.WriteByte('=')
		b.WriteString(formatDuration(s.took))
		if s.outcome != outcomeOK {
			b.WriteString("(" + s.outcome + ")")
		}
	}
	if run.omitted > 0 {
		b.WriteString(" +" + strconv.Itoa(run.omitted) + " more")
	}
	return b.String()
}

// formatDuration renders d for people, in plain ASCII and to the
// microsecond the events carry: milliseconds below a second ("0.3ms",
// "1.234ms", "250ms") and seconds from there ("12.5s").
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d.Microseconds())/1e3, 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(float64(d.Milliseconds())/1e3, 'f', -1, 64) + "s"
}

// hasAttr reports whether ev carries attribute k. The accessors return
// zero for a missing attribute, which for a duration cannot be told from
// a real zero.
func hasAttr(ev event.Event, k event.Key) bool {
	for _, a := range ev.Attrs {
		if a.Key == string(k) {
			return true
		}
	}
	return false
}

package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/cairnmq/cairn/event"
)

// eventLevels are the node events an operator sees at the default log
// level: each marks a change in who serves what (a queue activated or
// failed over, a metadata leader elected, a recovery or replacement
// planned, a replica replaced), or a defect the node found and refused to
// make worse. Every other event is logged at debug. The line's message is
// the event's name, as at debug, so tools that read logs back find it.
var eventLevels = map[event.Name]slog.Level{
	event.QueueActive:            slog.LevelInfo,
	event.RecoveryDone:           slog.LevelInfo,
	event.MetaLeader:             slog.LevelInfo,
	event.MetaActivated:          slog.LevelInfo,
	event.MetaPlanRecovery:       slog.LevelInfo,
	event.MetaPlanReplace:        slog.LevelInfo,
	event.MetaReplicaReplaced:    slog.LevelInfo,
	event.QueueFenced:            slog.LevelWarn,
	event.QueueRefusedTruncation: slog.LevelWarn,
	event.RecoveryUnsupported:    slog.LevelWarn,
	event.MetaCatchingUp:         slog.LevelWarn,
	event.MetaFollowerLostLog:    slog.LevelWarn,
	event.NodeDiskFull:           slog.LevelWarn,
	event.NodeDiskOK:             slog.LevelInfo,
	event.CheckpointMismatch:     slog.LevelWarn,
	event.CheckpointRefused:      slog.LevelWarn,
}

// Some of these repeat while their cause lasts (a refused truncation is
// asked again at every tick, a recovery that cannot finish is planned
// again): each name may log logBurst lines at once and one more every
// logEvery, and the next line says how many were left out.
const (
	logBurst = 5
	logEvery = 10 * time.Second
)

// eventLogger writes node events to the node's log at their level.
type eventLogger struct {
	log    *slog.Logger
	limits map[event.Name]*logLimiter
}

func newEventLogger(log *slog.Logger) *eventLogger {
	l := &eventLogger{log: log, limits: make(map[event.Name]*logLimiter)}
	for name := range eventLevels {
		l.limits[name] = newLogLimiter(logBurst, logEvery)
	}
	return l
}

// emit logs ev, if its level is enabled and its name is not over its
// rate.
func (l *eventLogger) emit(now time.Time, ev event.Event) {
	level, ok := eventLevels[ev.Name]
	if !ok {
		level = slog.LevelDebug
	}
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	attrs := ev.Attrs
	if lim := l.limits[ev.Name]; lim != nil {
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

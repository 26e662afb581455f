package live

import (
	"sync"
	"time"
)

// logLimiter is a token bucket for log lines that an outsider can cause
// at will, such as refused connections: a flood of them must cost a few
// lines, not disk space. Lines it suppresses are counted, and the next
// line it lets through says how many there were.
type logLimiter struct {
	burst    float64
	perToken time.Duration

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

// newLogLimiter allows burst lines at once and one more every perToken.
func newLogLimiter(burst int, perToken time.Duration) *logLimiter {
	return &logLimiter{burst: float64(burst), perToken: perToken, tokens: float64(burst)}
}

// allow reports whether a line may be written now and, if so, how many
// were suppressed since the last one written.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.perToken))
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.tokens--
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

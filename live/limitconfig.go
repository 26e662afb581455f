package live

import (
	"fmt"
	"time"
)

// Limits bound what connections may cost the node: how many may be open,
// authenticated or not, and how long each may sit without progress. Zero
// values take the defaults noted; a negative timeout disables it.
type Limits struct {
	// MaxPreAuthConns bounds the connections of one port (client or
	// peer) still in TLS or the session handshake. Default 256.
	MaxPreAuthConns int
	// MaxPreAuthPerSource bounds those of one port from one IP address.
	// Default 32.
	MaxPreAuthPerSource int
	// MaxHTTPConns bounds open HTTP connections. Default 128.
	MaxHTTPConns int
	// FDReserve is how many file descriptors are kept for the node's own
	// files (logs, state, checkpoints), out of the process's limit.
	// Default a quarter of the limit, and at least 128.
	FDReserve int
	// MaxConns bounds every socket the node holds at once: both ports,
	// pre-authentication included, dialed peers and HTTP. Default: the
	// descriptor limit less FDReserve, or the sum of the other caps if
	// that is lower. It may not exceed the limit less FDReserve.
	MaxConns int

	// FrameReadTimeout bounds how long a frame may take to arrive once
	// its first byte has: a connection stalled in mid-frame is closed.
	// Default 30s.
	FrameReadTimeout time.Duration
	// ClientIdleTimeout closes a client connection that sends nothing for
	// this long. Subscribed clients refresh every few seconds, and the Go
	// client redials when it next needs a node. Default 5m.
	ClientIdleTimeout time.Duration

	// HTTP server timeouts: for the request headers, the whole request,
	// writing the response, and an idle keep-alive connection. Defaults
	// 5s, 30s, 30s and 60s.
	HTTPReadHeaderTimeout time.Duration
	HTTPReadTimeout       time.Duration
	HTTPWriteTimeout      time.Duration
	HTTPIdleTimeout       time.Duration
}

// Default limits.
const (
	defaultMaxPreAuthConns     = 256
	defaultMaxPreAuthPerSource = 32
	defaultMaxHTTPConns        = 128
	minFDReserve               = 128
	defaultFrameReadTimeout    = 30 * time.Second
	defaultClientIdleTimeout   = 5 * time.Minute
)

// fill sets defaults; fdLimit is the process's descriptor limit, or 0 if
// unknown.
func (l *Limits) fill(maxClients, members, fdLimit int) {
	setInt(&l.MaxPreAuthConns, defaultMaxPreAuthConns)
	setInt(&l.MaxPreAuthPerSource, defaultMaxPreAuthPerSource)
	setInt(&l.MaxHTTPConns, defaultMaxHTTPConns)
	setInt(&l.FDReserve, max(minFDReserve, fdLimit/4))
	if l.MaxConns == 0 {
		// Every cap at once, each peer counted twice (dialed and
		// accepted during a reconnect).
		l.MaxConns = maxClients + 2*l.MaxPreAuthConns + l.MaxHTTPConns + 2*members
		if fdLimit > 0 {
			l.MaxConns = min(l.MaxConns, fdLimit-l.FDReserve)
		}
	}
	setDuration(&l.FrameReadTimeout, defaultFrameReadTimeout)
	setDuration(&l.ClientIdleTimeout, defaultClientIdleTimeout)
	setDuration(&l.HTTPReadHeaderTimeout, 5*time.Second)
	setDuration(&l.HTTPReadTimeout, 30*time.Second)
	setDuration(&l.HTTPWriteTimeout, 30*time.Second)
	setDuration(&l.HTTPIdleTimeout, 60*time.Second)
}

func setInt(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}

func setDuration(v *time.Duration, def time.Duration) {
	if *v == 0 {
		*v = def
	}
}

// validate reports the first limit that cannot work, naming it.
func (l *Limits) validate(fdLimit int) error {
	switch {
	case l.MaxPreAuthConns < 1 || l.MaxPreAuthPerSource < 1 || l.MaxHTTPConns < 1:
		return fmt.Errorf("live: Limits.MaxPreAuthConns, MaxPreAuthPerSource and MaxHTTPConns must be positive")
	case l.FDReserve < 0:
		return fmt.Errorf("live: Limits.FDReserve %d is negative", l.FDReserve)
	case l.MaxConns < 1 && fdLimit > 0:
		return fmt.Errorf("live: the descriptor limit (%d) leaves no room for connections after reserving %d for the node's files; raise the limit (ulimit -n) or lower FDReserve", fdLimit, l.FDReserve)
	case l.MaxConns < 1:
		return fmt.Errorf("live: Limits.MaxConns %d must be positive", l.MaxConns)
	case fdLimit > 0 && l.MaxConns > fdLimit-l.FDReserve:
		return fmt.Errorf("live: Limits.MaxConns %d exceeds the descriptor limit (%d) less FDReserve (%d)", l.MaxConns, fdLimit, l.FDReserve)
	}
	return nil
}

// disabled turns a negative timeout into none (zero).
func disabled(d time.Duration) time.Duration { return max(d, 0) }

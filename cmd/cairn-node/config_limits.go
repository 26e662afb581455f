package main

import (
	"fmt"
	"net"
	"time"

	"github.com/cairnmq/cairn/live"
)

// limitsConfig is the [limits] table. Zero or absent values take the
// runtime's defaults (see live.Limits); timeouts also take "off".
type limitsConfig struct {
	MaxClients            int    `toml:"max_clients"`
	MaxPreAuthConns       int    `toml:"max_preauth_conns"`
	MaxPreAuthPerSource   int    `toml:"max_preauth_per_source"`
	MaxHTTPConns          int    `toml:"max_http_conns"`
	MaxConns              int    `toml:"max_conns"`
	FDReserve             int    `toml:"fd_reserve"`
	HandshakeTimeout      string `toml:"handshake_timeout"`
	FrameReadTimeout      string `toml:"frame_read_timeout"`
	ClientIdleTimeout     string `toml:"client_idle_timeout"`
	HTTPReadHeaderTimeout string `toml:"http_read_header_timeout"`
	HTTPReadTimeout       string `toml:"http_read_timeout"`
	HTTPWriteTimeout      string `toml:"http_write_timeout"`
	HTTPIdleTimeout       string `toml:"http_idle_timeout"`
}

// timeout is one duration key of the table and where it goes.
type timeout struct {
	field string
	value string
	into  *time.Duration
	// offOK allows "off"; the handshake timeout is never off, or a
	// stranger could hold a connection forever.
	offOK bool
}

func (l *limitsConfig) timeouts(cfg *live.Config) []timeout {
	lim := &cfg.Limits
	return []timeout{
		{"handshake_timeout", l.HandshakeTimeout, &cfg.HandshakeTimeout, false},
		{"frame_read_timeout", l.FrameReadTimeout, &lim.FrameReadTimeout, true},
		{"client_idle_timeout", l.ClientIdleTimeout, &lim.ClientIdleTimeout, true},
		{"http_read_header_timeout", l.HTTPReadHeaderTimeout, &lim.HTTPReadHeaderTimeout, false},
		{"http_read_timeout", l.HTTPReadTimeout, &lim.HTTPReadTimeout, true},
		{"http_write_timeout", l.HTTPWriteTimeout, &lim.HTTPWriteTimeout, true},
		{"http_idle_timeout", l.HTTPIdleTimeout, &lim.HTTPIdleTimeout, false},
	}
}

// parse reads the timeout: zero when absent (the default), negative for
// "off".
func (t timeout) parse() (time.Duration, error) {
	switch {
	case t.value == "":
		return 0, nil
	case t.value == "off" && t.offOK:
		return -1, nil
	}
	d, err := time.ParseDuration(t.value)
	if err != nil || d <= 0 {
		if t.offOK {
			return 0, fmt.Errorf("config: limits.%s %q: want a positive duration such as 30s, or off", t.field, t.value)
		}
		return 0, fmt.Errorf("config: limits.%s %q: want a positive duration such as 30s", t.field, t.value)
	}
	return d, nil
}

func (l *limitsConfig) validate() error {
	for _, c := range []struct {
		field string
		v     int
	}{
		{"max_clients", l.MaxClients}, {"max_preauth_conns", l.MaxPreAuthConns}, {"max_preauth_per_source", l.MaxPreAuthPerSource},
		{"max_http_conns", l.MaxHTTPConns}, {"max_conns", l.MaxConns}, {"fd_reserve", l.FDReserve},
	} {
		if c.v < 0 {
			return fmt.Errorf("config: limits.%s %d: must not be negative (0 or absent means the default)", c.field, c.v)
		}
	}
	for _, t := range l.timeouts(&live.Config{}) {
		if _, err := t.parse(); err != nil {
			return err
		}
	}
	return nil
}

// apply sets the validated limits on cfg.
func (l *limitsConfig) apply(cfg *live.Config) {
	cfg.MaxClients = l.MaxClients
	cfg.Limits.MaxPreAuthConns = l.MaxPreAuthConns
	cfg.Limits.MaxPreAuthPerSource = l.MaxPreAuthPerSource
	cfg.Limits.MaxHTTPConns = l.MaxHTTPConns
	cfg.Limits.MaxConns = l.MaxConns
	cfg.Limits.FDReserve = l.FDReserve
	for _, t := range l.timeouts(cfg) {
		*t.into, _ = t.parse()
	}
}

// httpListen is where the HTTP port listens: listen.http if set, and
// otherwise loopback on the port of this node's http_addr. The status
// pages name every node and queue, so they are not exposed beyond the
// machine unless the configuration says so.
func (fc *fileConfig) httpListen() string {
	if fc.Listen.HTTP != "" {
		return fc.Listen.HTTP
	}
	self := fc.self()
	if self == nil || self.HTTPAddr == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(self.HTTPAddr)
	if err != nil {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", port)
}

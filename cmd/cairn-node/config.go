package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/wire"
)

// fileConfig is the TOML configuration file of one node. Example:
//
//	id = 1
//	cluster = "orders-east"       # stamped into the data directory
//	data_dir = "data/n1"          # relative to this file
//	replication = 3
//	join = false                  # true: join a running cluster (see below)
//	log_level = "info"            # debug | info | warn | error
//	log_format = "text"           # text (logfmt) | json: one object a line
//	detection = "heartbeat"       # heartbeat | eager
//	replace_after = "5m"          # replace a replica down this long; "off" never
//	rest_after = "2s"             # an owner idle this long stops heartbeating; "off" never
//	shutdown_handoff = "10s"      # on SIGTERM, hand owned queues over first; "0s": don't
//	checkpoint_records = 100000   # confirmed records between checkpoints; -1: off
//	checkpoint_bytes = 33554432   # or appended bytes, whichever comes first
//	checkpoint_interval = "5m"    # or this long, if anything was confirmed
//	dedup_window = "2m"           # for queues created without a window of their own
//	segment_bytes = 67108864      # log segment size: compaction drops whole segments
//	min_free_bytes = 268435456    # below this much free space, refuse new messages; -1: off
//	max_data_bytes = 0            # a quota on what the queues keep; 0: none
//	peer_secret_file = "peer.secret"     # without TLS: one secret per role,
//	client_secret_file = "client.secret" # each also as peer_secret = "..." etc.
//	admin_secret_file = "admin.secret"   # optional: without it no admin connects
//	sqs_listen = "0.0.0.0:9324"   # optional: the SQS endpoint ([sqs], see config_sqs.go)
//
//	[listen]                      # defaults: this node's entry in peers
//	client = "0.0.0.0:7001"
//	peer = "0.0.0.0:7101"
//	http = "127.0.0.1:7201"       # default: loopback, on http_addr's port
//
//	[tls]                         # instead of the secrets; certificates name their
//	ca = "ca.pem"                 # role: cairn://node/ID, cairn://role/client or
//	cert = "n1.pem"               # cairn://role/admin
//	key = "n1-key.pem"
//
//	[http]
//	auth = "client"               # client | admin | none: who may read /status and /
//	open = ["/healthz", "/metrics"] # served without a credential
//
//	[limits]                      # every key optional; see docs/security.md
//	max_clients = 4096
//	max_preauth_conns = 256       # per port, still authenticating
//	max_preauth_per_source = 32   # per port and source IP
//	max_http_conns = 128
//	max_conns = 0                 # 0: the descriptor limit less fd_reserve
//	fd_reserve = 0                # 0: a quarter of the limit, at least 128
//	handshake_timeout = "5s"
//	frame_read_timeout = "30s"
//	client_idle_timeout = "5m"    # or "off"
//	http_read_header_timeout = "5s"
//	http_read_timeout = "30s"
//	http_write_timeout = "30s"
//	http_idle_timeout = "60s"
//
//	[[peers]]                     # every node, this one included; with
//	id = 1                        # join = true: this node and a seed or more
//	addr = "10.0.0.1:7101"        # where peers dial it
//	client_addr = "10.0.0.1:7001" # where clients dial it
//	http_addr = "10.0.0.1:7201"   # optional: status and metrics
type fileConfig struct {
	ID uint32 `toml:"id"`
	// Cluster names the cluster (letters, digits, '.', '_', '-'; at most
	// 64). The data directory is stamped with it and the node's ID on
	// first start; a node refuses to start on a directory stamped for
	// another node or cluster.
	Cluster     string `toml:"cluster"`
	DataDir     string `toml:"data_dir"`
	Replication int    `toml:"replication"`
	// Join says this node joins a running cluster instead of founding
	// one: on an empty data directory it waits for the metadata from
	// the cluster's leader, which sends it once an admin has added the
	// node (cairn cluster add-node). Peers then lists this node and at
	// least one node of the cluster. Once the node holds metadata, join
	// changes nothing, so it may stay set.
	Join     bool   `toml:"join"`
	LogLevel string `toml:"log_level"`
	// LogFormat is how log lines are written: "text" (key=value, the
	// default) or "json" (one JSON object a line, for log shippers).
	LogFormat string `toml:"log_format"`
	// Detection is the failure detection policy a fresh cluster starts
	// with. Once the metadata exists it is the metadata's policy that
	// counts (changing it is a metadata command, not yet exposed), so
	// editing this field later does nothing to a running cluster.
	Detection string `toml:"detection"`
	// DetectionInterval paces the metadata leader's pings (default
	// 100ms); DetectionGrace is how long a ping may go unanswered under
	// heartbeat detection before its node is confirmed down (default
	// 300ms, at least the interval).
	DetectionInterval string `toml:"detection_interval"`
	DetectionGrace    string `toml:"detection_grace"`
	// ReplaceAfter is how long a queue replica must stay confirmed down
	// before the metadata leader replaces it with a node outside the
	// queue's replica set; "off" never replaces. Default 5m.
	ReplaceAfter string `toml:"replace_after"`
	// RestAfter is how long a queue must be idle before its owner rests:
	// it stops heartbeating its replicas, and the next request waits one
	// round trip while it wakes. "off" keeps owners awake. Default 2s.
	RestAfter string `toml:"rest_after"`
	// ShutdownHandoff bounds how long a stopping node (SIGTERM or
	// Ctrl-C) spends handing the queues it owns to other replicas, still
	// serving clients, before it drains and exits; whatever it still owns
	// then fails over once it is down. "0s" or "off" skips the handoff.
	// Default 10s. It is meant for stopping nodes one at a time: nodes
	// stopped together may pass queues among themselves until the bound.
	ShutdownHandoff string `toml:"shutdown_handoff"`
	// CheckpointRecords and CheckpointBytes say how much a queue's owner
	// confirms between checkpoints (0: the defaults, 100,000 records and
	// 32 MiB; CheckpointRecords -1 turns checkpoints and compaction off).
	// SegmentBytes is the log segment size (0: 64 MiB): a queue retains
	// about its live backlog plus two segments.
	CheckpointRecords  int    `toml:"checkpoint_records"`
	CheckpointBytes    int64  `toml:"checkpoint_bytes"`
	CheckpointInterval string `toml:"checkpoint_interval"`
	SegmentBytes       int64  `toml:"segment_bytes"`
	// DedupWindow is the deduplication window of the queues created
	// without one of their own, which this node owns (empty: 2m). Give
	// every node the same, or such a queue's window changes with its
	// owner.
	DedupWindow string `toml:"dedup_window"`
	// MinFreeBytes is the free-space watermark (0: 256 MiB, -1: off) and
	// MaxDataBytes a quota on what the queues keep (0: none): past either
	// the node refuses new messages and queues with disk-full, and takes
	// them again once consumers drained enough for compaction to free
	// space.
	MinFreeBytes int64 `toml:"min_free_bytes"`
	MaxDataBytes int64 `toml:"max_data_bytes"`
	// Secret and SecretFile are the former single cluster secret; they
	// are refused with an explanation (see validateAuth).
	Secret     string `toml:"secret"`
	SecretFile string `toml:"secret_file"`
	// One secret per role, when TLS is off; each either inline or in a
	// file (see loadAuth).
	PeerSecret       string `toml:"peer_secret"`
	PeerSecretFile   string `toml:"peer_secret_file"`
	ClientSecret     string `toml:"client_secret"`
	ClientSecretFile string `toml:"client_secret_file"`
	AdminSecret      string `toml:"admin_secret"`
	AdminSecretFile  string `toml:"admin_secret_file"`
	Listen           struct {
		Client string `toml:"client"`
		Peer   string `toml:"peer"`
		HTTP   string `toml:"http"`
	} `toml:"listen"`
	TLS struct {
		CA   string `toml:"ca"`
		Cert string `toml:"cert"`
		Key  string `toml:"key"`
	} `toml:"tls"`
	HTTP   httpConfig   `toml:"http"`
	Limits limitsConfig `toml:"limits"`
	Peers  []peerEntry  `toml:"peers"`
	// SQSListen, when set, serves the Amazon SQS-compatible endpoint
	// there, configured by SQS; off by default.
	SQSListen string    `toml:"sqs_listen"`
	SQS       sqsConfig `toml:"sqs"`
}

type peerEntry struct {
	ID         uint32 `toml:"id"`
	Addr       string `toml:"addr"`
	ClientAddr string `toml:"client_addr"`
	HTTPAddr   string `toml:"http_addr"`
}

// minSecretLen is the shortest cluster secret accepted.
const minSecretLen = 16

// loadConfig reads and validates a configuration file. Relative paths in
// it are taken relative to the file's directory.
func loadConfig(path string) (*fileConfig, error) {
	var fc fileConfig
	md, err := toml.DecodeFile(path, &fc)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("config: unknown field %q", undecoded[0].String())
	}
	base := filepath.Dir(path)
	for _, p := range []*string{&fc.DataDir, &fc.SecretFile, &fc.TLS.CA, &fc.TLS.Cert, &fc.TLS.Key,
		&fc.PeerSecretFile, &fc.ClientSecretFile, &fc.AdminSecretFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	fc.SQS.resolve(base)
	return &fc, nil
}

// validate checks every field, naming the first bad one.
func (fc *fileConfig) validate() error {
	if err := fc.validatePeers(); err != nil {
		return err
	}
	self := fc.self()
	switch {
	case fc.ID == 0:
		return errors.New("config: id is required and must be non-zero")
	case self == nil:
		return fmt.Errorf("config: id %d is not among peers[].id", fc.ID)
	case fc.DataDir == "":
		return errors.New("config: data_dir is required")
	}
	if err := fc.validateReplication(); err != nil {
		return err
	}
	if err := fc.validateJoin(); err != nil {
		return err
	}
	if _, err := parseLevel(fc.LogLevel); err != nil {
		return err
	}
	if err := checkLogFormat(fc.LogFormat); err != nil {
		return err
	}
	if err := checkClusterName(fc.Cluster); err != nil {
		return err
	}
	if _, err := fc.detection(); err != nil {
		return err
	}
	if err := fc.validateStorage(); err != nil {
		return err
	}
	if _, err := fc.replaceAfter(); err != nil {
		return err
	}
	if _, err := fc.restAfter(); err != nil {
		return err
	}
	if _, err := fc.shutdownHandoff(); err != nil {
		return err
	}
	for _, l := range []struct{ field, value string }{
		{"listen.client", fc.Listen.Client}, {"listen.peer", fc.Listen.Peer}, {"listen.http", fc.Listen.HTTP},
	} {
		if err := checkListen(l.field, l.value); err != nil {
			return err
		}
	}
	if err := fc.HTTP.validate(); err != nil {
		return err
	}
	if err := fc.Limits.validate(); err != nil {
		return err
	}
	if err := fc.validateSQS(); err != nil {
		return err
	}
	return fc.validateAuth()
}

func (fc *fileConfig) validatePeers() error {
	if len(fc.Peers) == 0 {
		return errors.New("config: peers is empty: list every node of the cluster, this one included")
	}
	for i, p := range fc.Peers {
		field := fmt.Sprintf("peers[%d]", i)
		if p.ID == 0 {
			return fmt.Errorf("config: %s.id is required and must be non-zero", field)
		}
		if slices.ContainsFunc(fc.Peers[:i], func(o peerEntry) bool { return o.ID == p.ID }) {
			return fmt.Errorf("config: %s.id %d appears twice", field, p.ID)
		}
		if err := checkDialable(field+".addr", p.Addr, true); err != nil {
			return err
		}
		if err := checkDialable(field+".client_addr", p.ClientAddr, true); err != nil {
			return err
		}
		if err := checkDialable(field+".http_addr", p.HTTPAddr, false); err != nil {
			return err
		}
	}
	return nil
}

func (fc *fileConfig) self() *peerEntry {
	for i := range fc.Peers {
		if fc.Peers[i].ID == fc.ID {
			return &fc.Peers[i]
		}
	}
	return nil
}

// checkAddr checks a host:port address, naming field in the error.
func checkAddr(field, v string) (host string, err error) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		reason := err.Error()
		var ae *net.AddrError
		if errors.As(err, &ae) {
			reason = strings.TrimSuffix(ae.Err, " in address")
		}
		return "", fmt.Errorf("config: %s %q: %s", field, v, reason)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("config: %s %q: port %q is not a number from 0 to 65535", field, v, port)
	}
	return host, nil
}

// checkDialable checks an address others dial: it needs a concrete host
// and a port.
func checkDialable(field, v string, required bool) error {
	if v == "" {
		if required {
			return fmt.Errorf("config: %s is required", field)
		}
		return nil
	}
	host, err := checkAddr(field, v)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("config: %s %q: other nodes and clients cannot dial an unspecified host", field, v)
	}
	if strings.HasSuffix(v, ":0") {
		return fmt.Errorf("config: %s %q: port 0 cannot be dialed", field, v)
	}
	return nil
}

// checkListen checks an optional listen address.
func checkListen(field, v string) error {
	if v == "" {
		return nil
	}
	_, err := checkAddr(field, v)
	return err
}

// parseLevel parses log_level; empty means info.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("config: log_level %q: want debug, info, warn or error", s)
}

// The values of log_format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// checkLogFormat refuses a log_format other than text or json; empty
// means text.
func checkLogFormat(s string) error {
	switch s {
	case "", logFormatText, logFormatJSON:
		return nil
	}
	return fmt.Errorf("config: log_format %q: want text or json", s)
}

// detection builds the initial failure detection policy.
func (fc *fileConfig) detection() (node.DetectionPolicy, error) {
	p := node.DetectionPolicy{Mode: node.DetectHeartbeat, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}
	switch fc.Detection {
	case "", "heartbeat":
	case "eager":
		p.Mode, p.Grace = node.DetectEager, 0
	default:
		return p, fmt.Errorf("config: detection %q: want heartbeat or eager", fc.Detection)
	}
	for _, d := range []struct {
		field, value string
		into         *time.Duration
	}{{"detection_interval", fc.DetectionInterval, &p.Interval}, {"detection_grace", fc.DetectionGrace, &p.Grace}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v < 0 {
			return p, fmt.Errorf("config: %s %q: want a non-negative duration such as 250ms", d.field, d.value)
		}
		*d.into = v
	}
	if p.Interval <= 0 {
		return p, fmt.Errorf("config: detection_interval must be positive")
	}
	return p, nil
}

// checkClusterName refuses a cluster name that would be awkward in logs,
// paths and error messages.
func checkClusterName(name string) error {
	if len(name) > 64 {
		return fmt.Errorf("config: cluster %q: at most 64 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("config: cluster %q: only letters, digits, '.', '_' and '-' are allowed, not %q", name, c)
		}
	}
	return nil
}

// replaceAfter parses replace_after: zero means the node's default,
// negative means never.
func (fc *fileConfig) replaceAfter() (time.Duration, error) {
	return durationOrOff("replace_after", fc.ReplaceAfter, "5m")
}

// restAfter parses rest_after: zero means the node's default, negative
// means never.
func (fc *fileConfig) restAfter() (time.Duration, error) {
	return durationOrOff("rest_after", fc.RestAfter, "2s")
}

// durationOrOff parses a setting that takes a positive duration or
// "off": empty gives zero (the default), "off" a negative duration.
func durationOrOff(key, value, example string) (time.Duration, error) {
	switch value {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	}
	v, err := time.ParseDuration(value)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("config: %s %q: want a positive duration such as %s, or off", key, value, example)
	}
	return v, nil
}

// shutdownHandoff parses shutdown_handoff: zero means the runtime's
// default, negative means no handoff.
func (fc *fileConfig) shutdownHandoff() (time.Duration, error) {
	switch fc.ShutdownHandoff {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	}
	v, err := time.ParseDuration(fc.ShutdownHandoff)
	switch {
	case err != nil || v < 0:
		return 0, fmt.Errorf("config: shutdown_handoff %q: want a duration such as 10s, or 0s (or off) for no handoff", fc.ShutdownHandoff)
	case v == 0:
		return -1, nil
	}
	return v, nil
}

// validateStorage checks the checkpoint and segment settings.
func (fc *fileConfig) validateStorage() error {
	switch {
	case fc.CheckpointRecords < -1:
		return fmt.Errorf("config: checkpoint_records %d: want a count of records, 0 for the default, or -1 for no checkpoints", fc.CheckpointRecords)
	case fc.CheckpointBytes < 0:
		return fmt.Errorf("config: checkpoint_bytes %d: want a byte count, or 0 for the default", fc.CheckpointBytes)
	case fc.SegmentBytes != 0 && (fc.SegmentBytes < 64<<10 || fc.SegmentBytes > 1<<30):
		return fmt.Errorf("config: segment_bytes %d: want 0 for the default, or 64 KiB to 1 GiB", fc.SegmentBytes)
	case fc.MinFreeBytes < -1:
		return fmt.Errorf("config: min_free_bytes %d: want a byte count, 0 for the default, or -1 for no watermark", fc.MinFreeBytes)
	case fc.MaxDataBytes < 0:
		return fmt.Errorf("config: max_data_bytes %d: want a byte count, or 0 for no quota", fc.MaxDataBytes)
	}
	if _, err := fc.checkpointInterval(); err != nil {
		return err
	}
	_, err := fc.dedupWindow()
	return err
}

// dedupWindow parses dedup_window: zero means the node's default.
func (fc *fileConfig) dedupWindow() (time.Duration, error) {
	if fc.DedupWindow == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(fc.DedupWindow)
	if err == nil {
		err = wire.CheckDedupWindow(v)
	}
	if err != nil || v == 0 {
		return 0, fmt.Errorf("config: dedup_window %q: want a duration from %v to %v, such as 2m", fc.DedupWindow, wire.MinDedupWindow, wire.MaxDedupWindow)
	}
	return v, nil
}

// checkpointInterval parses checkpoint_interval: zero means the node's
// default.
func (fc *fileConfig) checkpointInterval() (time.Duration, error) {
	if fc.CheckpointInterval == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(fc.CheckpointInterval)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("config: checkpoint_interval %q: want a positive duration such as 5m", fc.CheckpointInterval)
	}
	return v, nil
}

// liveConfig turns a validated file configuration into the runtime's.
func (fc *fileConfig) liveConfig(logger *slog.Logger) (live.Config, error) {
	self := fc.self()
	dataDir, err := filepath.Abs(fc.DataDir)
	if err != nil {
		return live.Config{}, fmt.Errorf("config: data_dir %q: %w", fc.DataDir, err)
	}
	detection, _ := fc.detection()
	replaceAfter, _ := fc.replaceAfter()
	restAfter, _ := fc.restAfter()
	checkpointInterval, _ := fc.checkpointInterval()
	dedupWindow, _ := fc.dedupWindow()
	shutdownHandoff, _ := fc.shutdownHandoff()
	cfg := live.Config{
		Node: node.Config{ID: node.NodeID(fc.ID), Cluster: fc.Cluster, Replicas: fc.Replication, Join: fc.Join, Detection: detection,
			ReplaceAfter: replaceAfter, RestAfter: restAfter, CheckpointRecords: fc.CheckpointRecords, CheckpointBytes: fc.CheckpointBytes,
			SegmentSize: fc.SegmentBytes, DiskFreeMin: fc.MinFreeBytes, DataBytesMax: fc.MaxDataBytes,
			CheckpointInterval: checkpointInterval, DedupWindow: dedupWindow},
		DataDir: dataDir, Logger: logger, ShutdownHandoff: shutdownHandoff,
		ClientListen: cmp.Or(fc.Listen.Client, self.ClientAddr),
		PeerListen:   cmp.Or(fc.Listen.Peer, self.Addr),
		HTTPListen:   fc.httpListen(),
	}
	for _, p := range fc.Peers {
		cfg.Members = append(cfg.Members, live.Member{ID: node.NodeID(p.ID), PeerAddr: p.Addr, ClientAddr: p.ClientAddr, HTTPAddr: p.HTTPAddr})
	}
	if err := fc.loadAuth(&cfg); err != nil {
		return live.Config{}, err
	}
	fc.HTTP.apply(&cfg)
	fc.Limits.apply(&cfg)
	return cfg, nil
}

// Package protocol is the line protocol between cairn-bench and a peer
// harness: the commands a harness reads, one a line on its standard
// input, and the JSON answers it writes, one a line on its standard
// output. Every harness parses and answers through it, so that they all
// speak the protocol bench/README.md describes.
package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The commands' forms, for error messages.
const (
	DrainUsage    = "drain <messages> <payload bytes> <async|sync>"
	FailoverUsage = "failover <backlog messages> <payload bytes> [<timeout seconds>]"
	PublishUsage  = "publish <window seconds> <warmup seconds> <in flight> <payload bytes>"
	CreateUsage   = "create <streams> <concurrency>"
)

// maxCreate bounds the streams or queues a create command may ask for.
const maxCreate = 100000

// maxPublishWindow bounds the window a publish command may ask for.
const maxPublishWindow = 10 * time.Minute

// maxPublishInFlight bounds the publishes a publish command may keep
// outstanding at once.
const maxPublishInFlight = 1 << 16

// DefaultFailoverTimeout is how long from the kill a failover may take to
// show both of its instants when the command names no timeout.
const DefaultFailoverTimeout = 30 * time.Second

// maxFailoverTimeout bounds the timeout a failover command may ask for.
const maxFailoverTimeout = time.Hour

// Drain is a parsed drain command.
type Drain struct {
	Messages int  // messages to publish, then drain
	Size     int  // payload bytes of each message
	Sync     bool // ack waiting for the server's confirmation
}

// Failover is a parsed failover command.
type Failover struct {
	Backlog int           // messages published, and acknowledged, before the kill
	Size    int           // payload bytes of each message
	Timeout time.Duration // how long from the kill both instants may take
}

// Publish is a parsed publish command: pipelined confirmed publishes to a
// fresh stream or queue for one window, with a consumer acking everything.
type Publish struct {
	Window   time.Duration // how long publishes are started
	Warmup   time.Duration // the start of the window, not counted
	InFlight int           // publishes awaiting their confirmation at once
	Size     int           // payload bytes of each message
}

// PublishAnswer is the answer to a publish: the rate of confirmations
// completed in the counted part of the window, the confirm latency of the
// publishes started in it, and the outcome of every publish of the window.
type PublishAnswer struct {
	Rate      float64 `json:"confirmed_per_second"`
	P50       float64 `json:"latency_p50_seconds"`
	P99       float64 `json:"latency_p99_seconds"`
	Max       float64 `json:"latency_max_seconds"`
	Confirmed int     `json:"confirmed"`
	Failed    int     `json:"failed"`
	Lost      int     `json:"lost"` // confirmed, yet never delivered to the consumer
}

// Create is a parsed create command: that many replicated streams (or
// queues) made on a fresh cluster by Concurrency creators, each waiting
// for its create before it starts the next.
type Create struct {
	Streams     int
	Concurrency int
}

// CreateAnswer is the answer to a create: the rate over the whole run,
// and each create's latency.
type CreateAnswer struct {
	Rate    float64 `json:"created_per_second"`
	P50     float64 `json:"create_p50_seconds"`
	P95     float64 `json:"create_p95_seconds"`
	Max     float64 `json:"create_max_seconds"`
	Created int     `json:"created"`
}

// DrainAnswer is the answer to a drain: both times from just before the
// consumer starts.
type DrainAnswer struct {
	Handled float64 `json:"handled_seconds"`
	Settled float64 `json:"settled_seconds"`
}

// FailoverAnswer is the answer to a failover: both instants from the kill.
type FailoverAnswer struct {
	FirstPublish  float64 `json:"first_publish_seconds"`
	FirstDelivery float64 `json:"first_delivery_seconds"`
}

// Command returns a line's command word: "drain", "failover", "publish", or anything
// else a harness does not know.
func Command(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// ParseDrain parses "drain <messages> <payload bytes> <async|sync>".
func ParseDrain(line string) (Drain, error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "drain" {
		return Drain{}, fmt.Errorf("%q: want %q", line, DrainUsage)
	}
	var d Drain
	var err error
	if d.Messages, err = strconv.Atoi(f[1]); err != nil || d.Messages < 1 {
		return d, fmt.Errorf("%q: messages must be a whole number of at least 1", line)
	}
	if d.Size, err = strconv.Atoi(f[2]); err != nil || d.Size < 0 {
		return d, fmt.Errorf("%q: payload bytes must be a whole number of at least 0", line)
	}
	switch f[3] {
	case "async":
	case "sync":
		d.Sync = true
	default:
		return d, fmt.Errorf("%q: the ack mode must be async or sync", line)
	}
	return d, nil
}

// ParseFailover parses "failover <backlog messages> <payload bytes>
// [<timeout seconds>]".
func ParseFailover(line string) (Failover, error) {
	f := strings.Fields(line)
	if len(f) < 3 || len(f) > 4 || f[0] != "failover" {
		return Failover{}, fmt.Errorf("%q: want %q", line, FailoverUsage)
	}
	req := Failover{Timeout: DefaultFailoverTimeout}
	var err error
	if req.Backlog, err = strconv.Atoi(f[1]); err != nil || req.Backlog < 0 {
		return req, fmt.Errorf("%q: the backlog must be a whole number of at least 0", line)
	}
	if req.Size, err = strconv.Atoi(f[2]); err != nil || req.Size < 0 {
		return req, fmt.Errorf("%q: payload bytes must be a whole number of at least 0", line)
	}
	if len(f) == 4 {
		s, err := strconv.ParseFloat(f[3], 64)
		if err != nil || s <= 0 || s > maxFailoverTimeout.Seconds() {
			return req, fmt.Errorf("%q: the timeout must be a number of seconds above 0 and at most %v", line, maxFailoverTimeout.Seconds())
		}
		req.Timeout = time.Duration(s * float64(time.Second))
	}
	return req, nil
}

// ParsePublish parses "publish <window seconds> <warmup seconds> <in
// flight> <payload bytes>".
func ParsePublish(line string) (Publish, error) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "publish" {
		return Publish{}, fmt.Errorf("%q: want %q", line, PublishUsage)
	}
	var req Publish
	window, err := strconv.ParseFloat(f[1], 64)
	if err != nil || window <= 0 || window > maxPublishWindow.Seconds() {
		return req, fmt.Errorf("%q: the window must be a number of seconds above 0 and at most %v", line, maxPublishWindow.Seconds())
	}
	warmup, err := strconv.ParseFloat(f[2], 64)
	if err != nil || warmup < 0 || warmup >= window {
		return req, fmt.Errorf("%q: the warmup must be a number of seconds of at least 0 and below the window", line)
	}
	req.Window, req.Warmup = time.Duration(window*float64(time.Second)), time.Duration(warmup*float64(time.Second))
	if req.InFlight, err = strconv.Atoi(f[3]); err != nil || req.InFlight < 1 || req.InFlight > maxPublishInFlight {
		return req, fmt.Errorf("%q: publishes in flight must be a whole number from 1 to %d", line, maxPublishInFlight)
	}
	if req.Size, err = strconv.Atoi(f[4]); err != nil || req.Size < 0 {
		return req, fmt.Errorf("%q: payload bytes must be a whole number of at least 0", line)
	}
	return req, nil
}

// ParseCreate parses "create <streams> <concurrency>".
func ParseCreate(line string) (Create, error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "create" {
		return Create{}, fmt.Errorf("%q: want %q", line, CreateUsage)
	}
	var req Create
	var err error
	if req.Streams, err = strconv.Atoi(f[1]); err != nil || req.Streams < 1 || req.Streams > maxCreate {
		return req, fmt.Errorf("%q: streams must be a whole number from 1 to %d", line, maxCreate)
	}
	if req.Concurrency, err = strconv.Atoi(f[2]); err != nil || req.Concurrency < 1 || req.Concurrency > req.Streams {
		return req, fmt.Errorf("%q: the concurrency must be a whole number from 1 to the number of streams", line)
	}
	return req, nil
}

// Unknown is the error for a line that is no known command.
func Unknown(line string) error {
	return fmt.Errorf("unknown command %q: want %q, %q, %q or %q", line, DrainUsage, FailoverUsage, PublishUsage, CreateUsage)
}

// Error renders a failure as the protocol's error line.
func Error(err error) []byte {
	return Line(struct {
		Error string `json:"error"`
	}{err.Error()})
}

// Line renders v as one line of JSON. HTML escaping is off so that an
// error quoting the protocol's "<messages>" stays readable to a person.
// The values given are plain structs of numbers and strings, which always
// encode, so an encoding error cannot happen.
func Line(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

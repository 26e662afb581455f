package client

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/cairnmq/cairn/session"
)

// Options configure a Client. Zero values take the defaults noted.
type Options struct {
	// TLS enables mutual TLS: it must carry the client's certificate and
	// the CA that signed the nodes' certificates (RootCAs). When
	// ServerName is empty it is set to the host of each address dialed.
	TLS *tls.Config
	// Secret is the client secret, or with Admin the admin secret, for
	// clusters running without TLS. One of TLS and Secret is required.
	Secret []byte
	// Admin connects in the admin role, which alone may delete queues
	// and change the failure detection policy: with the admin secret in
	// Secret, or a TLS certificate that names the admin role. Without
	// it the client connects in the client role: publish, consume and
	// create queues.
	Admin bool

	// DialTimeout bounds connecting to one node, handshake included.
	// Default 5s.
	DialTimeout time.Duration
	// RequestTimeout bounds one attempt of a request; an attempt that
	// times out is ambiguous and may be retried. Default 5s.
	RequestTimeout time.Duration
	// RetryFor bounds how long one operation keeps retrying, from its
	// first attempt, before it gives up (with its outcome unknown if any
	// attempt may have been acted on). The default, 10s, is several times
	// longer than a failover takes, so an operation rides through one:
	// it is redirected to the new owner and sees only latency.
	RetryFor time.Duration
	// MaxAttempts also bounds the attempts of one operation, when set:
	// the requests it sends, hedges (see HedgeAfter) included, so with 1
	// a request only ever reaches one node. A hedge never takes the last
	// attempt allowed. Default: no bound but RetryFor.
	MaxAttempts int
	// HedgeAfter is how long a publish or subscribe waits for the reply
	// to an attempt before the client sends the same request to another
	// node as well, keeping the first attempt: whichever is confirmed
	// first completes the operation. It spares an operation sent to an
	// owner that stopped answering without its connection breaking
	// (paused, or partitioned silently) the whole RequestTimeout, when
	// the cluster has a new owner serving within a fraction of a second.
	// A hedged publish is stored once, as any retried publish is. Acks,
	// nacks, queue creation and deletion are never hedged. Default:
	// adaptive, the smoothed confirmation time of this client's publishes
	// plus four deviations, held between 50ms and 200ms (200ms until a
	// first publish is confirmed). A positive value fixes the delay;
	// negative turns hedging off.
	HedgeAfter time.Duration
	// RetryBackoff is the base of the jittered exponential backoff
	// between attempts; MaxBackoff caps it. Defaults 50ms and 2s.
	RetryBackoff time.Duration
	MaxBackoff   time.Duration
	// SendQueue bounds the requests waiting to be written on one
	// connection; overflowing it drops the connection. Default 4096.
	SendQueue int
	// Logger receives the client's debug logs. Default: discarded.
	Logger *slog.Logger
}

func (o *Options) fill() error {
	if o.TLS == nil && len(o.Secret) == 0 {
		return errors.New("client: Options needs TLS or a Secret (the client or admin secret); nodes refuse unauthenticated clients")
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Second
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 10 * time.Second
	}
	if o.MaxAttempts < 0 {
		o.MaxAttempts = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = max(2*time.Second, o.RetryBackoff)
	}
	if o.SendQueue <= 0 {
		o.SendQueue = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return nil
}

// role is the role the client claims in the handshake.
func (o *Options) role() session.Role {
	if o.Admin {
		return session.RoleAdmin
	}
	return session.RoleClient
}

// CreateOption adjusts a queue being created.
type CreateOption func(*createOptions)

type createOptions struct {
	dedupWindow   time.Duration
	deadLetter    string
	maxDeliveries uint32
}

// MinDedupWindow and MaxDedupWindow bound a queue's deduplication
// window: the nodes refuse to create a queue with a window outside them.
const (
	MinDedupWindow = time.Second
	MaxDedupWindow = 24 * time.Hour
)

// WithDedupWindow sets how long the queue remembers a published message
// ID. A publish retried with the same ID (as the client does until its
// deadline) within the window is stored once; one retried after it is
// stored as a new message. The window must lie between MinDedupWindow
// and MaxDedupWindow; without the option the queue takes the nodes'
// default (2m unless their configuration says otherwise).
func WithDedupWindow(d time.Duration) CreateOption {
	return func(o *createOptions) { o.dedupWindow = d }
}

// MaxDeliveriesLimit bounds a queue's delivery limit: the nodes refuse a
// larger one.
const MaxDeliveriesLimit = 1000

// WithDeadLetter gives the queue a delivery limit: a message delivered
// maxDeliveries times without being acked (each nack, each lease that
// ran out and each consumer lost while holding it counts) moves to the
// queue named deadLetter, once, under the same message ID, and is not
// delivered from this queue again. maxDeliveries lies between 1 and
// MaxDeliveriesLimit.
//
// Create the dead-letter queue first: until a queue of that name exists,
// messages past the limit wait in this queue, out of delivery (the
// queue's depth counts them as DeadLettering). The count is kept by the
// owner alone, so a failover starts every message's count again.
// SetDeadLetter changes or removes the limit later.
func WithDeadLetter(deadLetter string, maxDeliveries int) CreateOption {
	return func(o *createOptions) {
		o.deadLetter = deadLetter
		o.maxDeliveries = uint32(max(0, min(maxDeliveries, MaxDeliveriesLimit+1)))
	}
}

// PublishOption adjusts one publish.
type PublishOption func(*publishOptions)

type publishOptions struct {
	delay time.Duration
}

// WithDelay makes the message deliverable only after d has passed on the
// queue owner's clock.
func WithDelay(d time.Duration) PublishOption {
	return func(o *publishOptions) { o.delay = d }
}

// SubscribeOption adjusts a subscription.
type SubscribeOption func(*subscribeOptions)

type subscribeOptions struct {
	window      uint32
	lease       time.Duration
	concurrency int
}

// DefaultWindow is how many deliveries a subscription may have
// unsettled at once unless WithWindow says otherwise; JetStream's
// consumers allow 1,000 unacknowledged messages by default. A handler
// that acks as it goes drains a queue about twice as fast with 512 as
// with 256 (cairn-bench drain --window, 20,000 messages, three rounds
// each: 22,878 msg/s with 64, 36,711 with 256, 51,156 with 512), and
// since the owner writes a turn's acks in one record and the log gathers
// its appends, 1,024 drains 100,000 messages about a quarter faster than
// 512 (two runs of two rounds each, alternating: 76,396-88,255 against
// 60,403-68,706 msg/s), with less CPU per message in every process, as
// every stage works in larger batches. A consumer whose work per message
// is slow, or several consumers that should share a queue evenly, want
// a smaller window.
const DefaultWindow = 1024

// WithWindow bounds how many deliveries may be unsettled at once.
// Default DefaultWindow.
func WithWindow(n uint32) SubscribeOption {
	return func(o *subscribeOptions) { o.window = n }
}

// WithLease sets how long a delivery stays leased to this client before
// it is redelivered, unless Delivery.Extend keeps it longer. Default 30s.
func WithLease(d time.Duration) SubscribeOption {
	return func(o *subscribeOptions) { o.lease = d }
}

// WithConcurrency lets the handler run on up to n goroutines at once
// (default 1: one call at a time). Deliveries are still taken in the
// order they arrive, but with n above 1 the calls overlap, so one may
// finish, and ack, before an earlier one: a consumer that needs order
// keeps the default. The window (see WithWindow) bounds the deliveries
// unsettled at once, so n beyond it adds nothing. A Delivery's methods
// are safe to call from any goroutine, and Stop waits for every call in
// progress.
func WithConcurrency(n int) SubscribeOption {
	return func(o *subscribeOptions) { o.concurrency = n }
}

package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// ClusterConfig configures a ClusterBackend.
type ClusterConfig struct {
	// Addrs are client addresses to dial, the endpoint's own node first.
	Addrs []string
	// Client are the options the endpoint's connections use: the client
	// secret, or TLS with a client certificate. Admin is ignored.
	Client client.Options
	// Admin, when set, are the options of an admin connection, used only
	// to delete queues for access keys with the admin role. Without it
	// DeleteQueue is refused.
	Admin *client.Options
	// Status reads the endpoint's own node's status document: the queue
	// catalogue, and the counts of the queues the node owns.
	Status func(ctx context.Context) (status.Node, error)
	// OwnerStatus reads another node's status document from its HTTP
	// address, for the counts of a queue that node owns. Nil: counts are
	// known only for queues the endpoint's node owns.
	OwnerStatus func(ctx context.Context, httpAddr string) (*status.Node, error)
	// Window bounds the deliveries one receive buffer (a queue and a
	// visibility timeout) holds unsettled, handed out or not. Default
	// 256.
	Window int
	// IdleAfter is how long a receive buffer nobody receives from, with
	// nothing handed out, keeps its subscription; then it ends, and the
	// messages it held go back to the queue at once. Default 30s.
	IdleAfter time.Duration
	// Logger receives the backend's logs. Default slog.Default().
	Logger *slog.Logger
}

// ClusterBackend is the endpoint's Backend over a cairn cluster, through
// the public client: requests for a queue another node owns are sent
// there by the client, and retried through a failover as any client's.
type ClusterBackend struct {
	cfg   ClusterConfig
	main  *client.Client
	admin *client.Client

	mu sync.Mutex
	// receivers holds one client per visibility timeout, since a client
	// holds one subscription per queue.
	receivers map[time.Duration]*client.Client
	buffers   map[bufferKey]*buffer
	leases    map[uint64]*handedOut
	lastLease uint64

	// life ends when the backend closes; subscriptions live under it.
	life     context.Context
	lifeStop context.CancelFunc
	stop     chan struct{}
	done     chan struct{}
}

// handedOut is a delivery given to an SQS consumer and not yet settled.
type handedOut struct {
	d       *client.Delivery
	buf     *buffer
	expires time.Time
	lapsed  bool // the lease ran out; no longer counted as outstanding
}

// NewClusterBackend connects to the cluster.
func NewClusterBackend(ctx context.Context, cfg ClusterConfig) (*ClusterBackend, error) {
	if cfg.Window <= 0 {
		cfg.Window = 256
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Status == nil {
		return nil, errors.New("sqs: ClusterConfig.Status is required")
	}
	cfg.Client.Admin = false
	main, err := client.Dial(ctx, cfg.Client, cfg.Addrs...)
	if err != nil {
		return nil, err
	}
	b := &ClusterBackend{cfg: cfg, main: main, receivers: map[time.Duration]*client.Client{},
		buffers: map[bufferKey]*buffer{}, leases: map[uint64]*handedOut{}, stop: make(chan struct{}), done: make(chan struct{})}
	b.life, b.lifeStop = context.WithCancel(context.Background())
	if cfg.Admin != nil {
		opts := *cfg.Admin
		opts.Admin = true
		if b.admin, err = client.Dial(ctx, opts, cfg.Addrs...); err != nil {
			main.Close()
			return nil, fmt.Errorf("admin connection: %w", err)
		}
	}
	go b.sweepLoop()
	return b, nil
}

// Close ends every subscription and connection.
func (b *ClusterBackend) Close() error {
	close(b.stop)
	<-b.done
	b.lifeStop()
	b.mu.Lock()
	clients := []*client.Client{b.main}
	if b.admin != nil {
		clients = append(clients, b.admin)
	}
	for _, c := range b.receivers {
		clients = append(clients, c)
	}
	b.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	return nil
}

// CreateQueue creates a queue confirmed by a majority.
func (b *ClusterBackend) CreateQueue(ctx context.Context, name string, opts QueueOptions) error {
	var create []client.CreateOption
	if opts.DeadLetter != "" {
		create = append(create, client.WithDeadLetter(opts.DeadLetter, opts.MaxReceiveCount))
	}
	err := clientError(b.main.CreateQueue(ctx, name, client.PolicyMajority, create...))
	if err == nil || errors.Is(err, ErrQueueExists) {
		b.awaitCatalogue(ctx, name, true)
	}
	return err
}

// catalogueWaitMax bounds how long a create or delete waits for the
// endpoint's node to apply it.
const catalogueWaitMax = 5 * time.Second

// awaitCatalogue waits until the endpoint's own node has applied a
// create (present) or a delete (absent) of the queue. The client's
// request is confirmed once a majority commits it, and the endpoint's
// node may apply the entry a moment later; without the wait, a
// GetQueueAttributes or SendMessage right after CreateQueue could be
// told the queue does not exist. Past the bound, or if the status
// cannot be read, it returns anyway: the change is committed, and a
// node that lags that far is lagging for every request.
func (b *ClusterBackend) awaitCatalogue(ctx context.Context, name string, present bool) {
	b.awaitStatus(ctx, func(qs []status.Queue) bool {
		return slices.ContainsFunc(qs, func(q status.Queue) bool { return q.Name == name && exists(q) }) == present
	})
}

// awaitStatus polls the endpoint's own node until applied holds for the
// queues it lists, for at most catalogueWaitMax (see awaitCatalogue).
func (b *ClusterBackend) awaitStatus(ctx context.Context, applied func([]status.Queue) bool) {
	ctx, cancel := context.WithTimeout(ctx, catalogueWaitMax)
	defer cancel()
	for {
		st, err := b.cfg.Status(ctx)
		if err != nil || applied(st.Queues) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// SetRedrive changes the queue's dead-letter queue and delivery limit
// (both zero removes them), then waits for the endpoint's node to apply
// the change, so a GetQueueAttributes that follows reads it.
func (b *ClusterBackend) SetRedrive(ctx context.Context, name string, opts QueueOptions) error {
	err := b.main.SetDeadLetter(ctx, name, opts.DeadLetter, opts.MaxReceiveCount)
	if se := (*client.StatusError)(nil); errors.As(err, &se) && se.Status == client.StatusBadRequest {
		return fmt.Errorf("%w: %s", ErrBadRedrive, se.Detail)
	}
	err = clientError(err)
	if err == nil {
		b.awaitStatus(ctx, func(qs []status.Queue) bool {
			return slices.ContainsFunc(qs, func(q status.Queue) bool {
				return q.Name == name && q.DeadLetter == opts.DeadLetter && int(q.MaxDeliveries) == opts.MaxReceiveCount
			})
		})
	}
	return err
}

// DeleteQueue deletes a queue over the admin connection.
func (b *ClusterBackend) DeleteQueue(ctx context.Context, name string, role Role) error {
	if role != RoleAdmin || b.admin == nil {
		return fmt.Errorf("%w: the endpoint holds no admin credential for the cluster (configure one to delete queues)", ErrDenied)
	}
	err := clientError(b.admin.DeleteQueue(ctx, name))
	if err == nil {
		b.awaitCatalogue(ctx, name, false)
	}
	return err
}

// QueueNames lists the queues the metadata names, as the endpoint's node
// has applied it.
func (b *ClusterBackend) QueueNames(ctx context.Context) ([]string, error) {
	st, err := b.cfg.Status(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, q := range st.Queues {
		if exists(q) {
			names = append(names, q.Name)
		}
	}
	return names, nil
}

// Stats reads the queue's counts from its owner: the endpoint's own node
// or, over HTTP, the one the metadata names.
func (b *ClusterBackend) Stats(ctx context.Context, name string) (QueueStats, error) {
	st, err := b.cfg.Status(ctx)
	if err != nil {
		return QueueStats{}, err
	}
	var q *status.Queue
	for i := range st.Queues {
		if st.Queues[i].Name == name && exists(st.Queues[i]) {
			q = &st.Queues[i]
		}
	}
	if q == nil {
		return QueueStats{}, ErrNoQueue
	}
	var out QueueStats
	if q.Active && q.Depth != nil {
		out = statsFrom(q.Depth)
	} else {
		out = b.ownerStats(ctx, name, q.Owner)
	}
	out.DeadLetter, out.MaxReceiveCount = q.DeadLetter, int(q.MaxDeliveries)
	return out, nil
}

// ownerStats asks the owner's HTTP port for the queue's counts; unknown
// if it cannot be read or does not serve the queue.
func (b *ClusterBackend) ownerStats(ctx context.Context, name string, owner uint32) QueueStats {
	if b.cfg.OwnerStatus == nil {
		return QueueStats{}
	}
	for _, n := range b.main.Nodes() {
		if n.ID != owner || n.HTTPAddr == "" {
			continue
		}
		st, err := b.cfg.OwnerStatus(ctx, n.HTTPAddr)
		if err != nil {
			b.cfg.Logger.Debug("reading the owner's status", slog.Uint64("node", uint64(owner)), slog.String("err", err.Error()))
			return QueueStats{}
		}
		for _, q := range st.Queues {
			if q.Name == name && q.Active && q.Depth != nil {
				return statsFrom(q.Depth)
			}
		}
	}
	return QueueStats{}
}

// exists says whether the metadata has the queue: serving, or failing
// over. A queue still being created, or deleted, is not listed.
func exists(q status.Queue) bool { return q.State == "active" || q.State == "recovering" }

// statsFrom reads the owner's depth. A message on its way to the
// dead-letter queue is out of delivery, so SQS would count it in flight.
func statsFrom(d *status.Depth) QueueStats {
	return QueueStats{Known: true, Ready: d.Ready, Leased: d.Leased + d.DeadLettering, Delayed: d.Delayed}
}

// Send publishes and waits for the confirmation.
func (b *ClusterBackend) Send(ctx context.Context, queue string, payload []byte, delay time.Duration) (MessageID, error) {
	r := b.SendBatch(ctx, queue, []SendEntry{{Payload: payload, Delay: delay}})[0]
	return r.ID, r.Err
}

// SendBatch publishes every entry and waits for each confirmation. The
// publishes start one after another from this goroutine, without one
// goroutine each, so the client hands them to the owner together and
// they ride the same appends and replication rounds.
func (b *ClusterBackend) SendBatch(ctx context.Context, queue string, entries []SendEntry) []SendResult {
	pubs := make([]*client.Publishing, len(entries))
	for i, e := range entries {
		var opts []client.PublishOption
		if e.Delay > 0 {
			opts = append(opts, client.WithDelay(e.Delay))
		}
		pubs[i] = b.main.PublishAsync(ctx, queue, e.Payload, opts...)
	}
	out := make([]SendResult, len(entries))
	for i, p := range pubs {
		id, err := p.Wait()
		out[i] = SendResult{ID: MessageID{Producer: id.Producer, Seq: id.Seq}, Err: clientError(err)}
	}
	return out
}

// Delete acks the receipt's message and waits until the settle is
// durable.
func (b *ClusterBackend) Delete(ctx context.Context, queue string, r Receipt) error {
	return b.DeleteBatch(ctx, queue, []Receipt{r})[0]
}

// DeleteBatch acks every receipt's message, together, and waits until
// each settle is durable. A delivery this backend handed out and still
// holds is acked through the connection that received it (one frame and
// one durable write on the owner for those it holds); any other receipt,
// and any ack of the first kind that failed (the delivering owner died
// or stepped back meanwhile), is acked by the message's ID at the
// queue's current owner, which settles it whoever holds it now.
func (b *ClusterBackend) DeleteBatch(ctx context.Context, queue string, rs []Receipt) []error {
	errs := make([]error, len(rs))
	var ds []*client.Delivery
	var local, byID []int
	for i, r := range rs {
		if h := b.take(queue, r); h != nil {
			ds = append(ds, h.d)
			local = append(local, i)
			continue
		}
		byID = append(byID, i)
	}
	settled := make(map[client.MessageID]bool)
	for j, err := range client.AckSyncAll(ctx, ds) {
		if err != nil {
			byID = append(byID, local[j])
			continue
		}
		settled[ds[j].ID] = true
	}
	refs := make([]client.DeliveryRef, len(byID))
	for j, i := range byID {
		refs[j] = rs[i].ref(queue)
	}
	for j, err := range b.main.AckRefs(ctx, refs) {
		var se *client.StatusError
		if errors.As(err, &se) && se.Status == client.StatusNotLeased {
			// The owner holds no such message: deleted already, purged or
			// moving to its dead-letter queue. It will not come again.
			err = nil
		}
		if errs[byID[j]] = clientError(err); err == nil {
			settled[refs[j].ID] = true
		}
	}
	b.dropBuffered(queue, settled)
	return errs
}

// dropBuffered takes the deliveries of messages just settled out of the
// queue's buffers. A delivery of such a message can wait there: its lease
// ran out, or its owner failed over, and the owner sent it again before
// the delete with the old handle settled it, releasing the new lease.
// Handed out, it would be a message the application deleted. (A buffer
// of another node's endpoint cannot be told: its receive finds the lease
// gone, see confirmLeases.)
func (b *ClusterBackend) dropBuffered(queue string, ids map[client.MessageID]bool) {
	if len(ids) == 0 {
		return
	}
	for _, buf := range b.queueBuffers(queue) {
		buf.mu.Lock()
		buf.waiting = slices.DeleteFunc(buf.waiting, func(a arrival) bool { return ids[a.d.ID] })
		buf.mu.Unlock()
	}
}

// Release nacks the receipt's delivery, so it is delivered again at once.
func (b *ClusterBackend) Release(ctx context.Context, queue string, r Receipt) error {
	if h := b.take(queue, r); h != nil {
		return clientError(h.d.Nack(ctx))
	}
	return clientError(b.main.NackRef(ctx, r.ref(queue)))
}

// Extend asks the delivery's owner to keep its lease for visibility from
// now on; a delivery this backend still holds counts as handed out until
// then.
func (b *ClusterBackend) Extend(ctx context.Context, queue string, r Receipt, visibility time.Duration) error {
	b.mu.Lock()
	h := b.held(queue, r)
	b.mu.Unlock()
	if h == nil {
		return clientError(b.main.ExtendRef(ctx, r.ref(queue), visibility))
	}
	if err := clientError(h.d.Extend(ctx, visibility)); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.leases[r.Lease] == h {
		h.expires = time.Now().Add(visibility)
		if h.lapsed {
			h.lapsed = false
			h.buf.outstanding++
		}
	}
	return nil
}

// queueBuffers returns the queue's receive buffers, one per visibility
// timeout.
func (b *ClusterBackend) queueBuffers(queue string) []*buffer {
	b.mu.Lock()
	defer b.mu.Unlock()
	var bufs []*buffer
	for key, buf := range b.buffers {
		if key.queue == queue {
			bufs = append(bufs, buf)
		}
	}
	return bufs
}

// ref names the receipt's delivery for the queue's owner.
func (r Receipt) ref(queue string) client.DeliveryRef {
	return client.DeliveryRef{Queue: queue, ID: client.MessageID{Producer: r.ID.Producer, Seq: r.ID.Seq}, Lease: r.Grant}
}

// held finds the handed-out delivery a local receipt names; nil if the
// receipt is another backend's, or its delivery was settled or forgotten.
// The message must match too: a handle that outlived a restart of the
// endpoint's process would otherwise name a new delivery by the same
// number. b.mu must be held.
func (b *ClusterBackend) held(queue string, r Receipt) *handedOut {
	h, ok := b.leases[r.Lease]
	if !r.Local || !ok || h.buf.key.queue != queue || h.d.ID != (client.MessageID{Producer: r.ID.Producer, Seq: r.ID.Seq}) {
		return nil
	}
	return h
}

// take removes the handed-out delivery a local receipt names from the
// table, so it is settled once through its own connection; nil if there
// is none (see held).
func (b *ClusterBackend) take(queue string, r Receipt) *handedOut {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.held(queue, r)
	if h == nil {
		return nil
	}
	delete(b.leases, r.Lease)
	if !h.lapsed {
		h.buf.outstanding--
	}
	return h
}

// clientError maps the client's errors onto the backend's.
func clientError(err error) error {
	var se *client.StatusError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrUnknownOutcome):
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case !errors.As(err, &se):
		return err
	}
	switch se.Status {
	case client.StatusNoQueue:
		return fmt.Errorf("%w: %v", ErrNoQueue, err)
	case client.StatusQueueExists:
		return fmt.Errorf("%w: %v", ErrQueueExists, err)
	case client.StatusTooLarge:
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	case client.StatusNotLeased, client.StatusOwnerChanged:
		return fmt.Errorf("%w: the delivery's lease ended before the delete reached the queue (%v); the message will be delivered again", ErrLeaseGone, err)
	}
	return err
}

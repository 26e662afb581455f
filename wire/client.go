package wire

import (
	"fmt"
	"time"
)

// MessageID names a published message. The producer picks it (a producer
// identity plus a sequence number), so a retried publish carries the same
// ID and the owner can tell it from a new one.
type MessageID struct {
	Producer uint64
	Seq      uint64
}

// String renders the ID as p<producer>.<seq>.
func (id MessageID) String() string { return fmt.Sprintf("p%d.%d", id.Producer, id.Seq) }

func appendMessageID(b []byte, id MessageID) []byte {
	b = AppendUint64(b, id.Producer)
	return AppendUint64(b, id.Seq)
}

func (d *Decoder) messageID() MessageID { return MessageID{Producer: d.Uint64(), Seq: d.Uint64()} }

// Policy says how many replicas must hold a record durably before it is
// confirmed.
type Policy uint8

// Confirmation policies.
const (
	PolicyMajority  Policy = 0 // a majority of the replica set, the owner included
	PolicyAll       Policy = 1 // every replica
	PolicyOwnerOnly Policy = 2 // the owner alone
)

// String names the policy.
func (p Policy) String() string {
	switch p {
	case PolicyMajority:
		return "majority"
	case PolicyAll:
		return "all"
	case PolicyOwnerOnly:
		return "owner-only"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParsePolicy reads a policy by the name String gives it.
func ParsePolicy(name string) (Policy, error) {
	for _, p := range []Policy{PolicyMajority, PolicyAll, PolicyOwnerOnly} {
		if p.String() == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown confirmation policy %q: want majority, all or owner-only", name)
}

// Status is the outcome code of a client request.
type Status uint8

// Request outcomes. Retryable ones say the same request may succeed if
// sent again later or elsewhere.
const (
	StatusOK          Status = 0
	StatusNotOwner    Status = 1 // retryable: send to Reply.Owner
	StatusFenced      Status = 2 // retryable: this node's epoch is stale; Reply.Owner is newer
	StatusUnavailable Status = 3 // retryable: not ready or recovering; the node did not act on the request
	StatusNoQueue     Status = 4
	StatusQueueExists Status = 5
	StatusTooLarge    Status = 6
	StatusBadRequest  Status = 7
	StatusNotLeased   Status = 8 // ack, nack or extension of a delivery that is no longer leased
	// StatusDiskFull: the owner's disk is past its free-space watermark
	// (or its data quota); it takes no new messages or queues until space
	// returns, while deliveries and acks go on.
	StatusDiskFull Status = 9
)

var statusNames = [...]string{"ok", "not-owner", "fenced", "unavailable", "no-queue", "queue-exists", "too-large", "bad-request", "not-leased",
	"disk-full"}

// String names the status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// RequestID returns the request ID a client request carries; ok is false
// for any message that is not a client request. A SettleBatch carries one
// per item: RequestID gives the first, RequestIDs all of them.
func RequestID(m Message) (id uint64, ok bool) {
	switch m := m.(type) {
	case *CreateQueue:
		return m.ReqID, true
	case *DeleteQueue:
		return m.ReqID, true
	case *Publish:
		return m.ReqID, true
	case *Subscribe:
		return m.ReqID, true
	case *Settle:
		return m.ReqID, true
	case *SetDetection:
		return m.ReqID, true
	case *Unsubscribe:
		return m.ReqID, true
	case *Extend:
		return m.ReqID, true
	case *QueueInfo:
		return m.ReqID, true
	case *Purge:
		return m.ReqID, true
	case *MoveOwner:
		return m.ReqID, true
	case *SetQueueOptions:
		return m.ReqID, true
	case *AddNode:
		return m.ReqID, true
	case *RemoveNode:
		return m.ReqID, true
	case *MemberList:
		return m.ReqID, true
	case *Rebalance:
		return m.ReqID, true
	case *SettleBatch:
		if len(m.Items) > 0 {
			return m.Items[0].ReqID, true
		}
		return 0, true
	}
	return 0, false
}

// Retryable reports whether the same request may succeed later.
func (s Status) Retryable() bool {
	return s == StatusNotOwner || s == StatusFenced || s == StatusUnavailable
}

// MaxPayloadSize bounds a published payload.
const MaxPayloadSize = 1 << 20

// MaxQueueNameLen bounds a queue name.
const MaxQueueNameLen = 200

// MinDedupWindow and MaxDedupWindow bound the deduplication window a
// queue may be created with. A second is the shortest that still covers
// a retry sent at once after a lost reply; a day bounds the IDs a queue
// must hold in memory and in its checkpoints (a day of a thousand
// publishes a second is 86 million IDs, a few gigabytes).
const (
	MinDedupWindow = time.Second
	MaxDedupWindow = 24 * time.Hour
)

// CheckDedupWindow reports why d cannot be a queue's deduplication
// window; zero, the cluster's default, is always accepted.
func CheckDedupWindow(d time.Duration) error {
	if d != 0 && (d < MinDedupWindow || d > MaxDedupWindow) {
		return fmt.Errorf("deduplication window %v is outside [%v, %v]", d, MinDedupWindow, MaxDedupWindow)
	}
	return nil
}

// CreateQueue asks for a new queue. DedupWindow is how long the queue
// remembers a published message ID; zero leaves it to the nodes'
// default. DeadLetter, with MaxDeliveries, names the queue a message
// moves to once it was delivered MaxDeliveries times without being
// acked (see CheckDeadLetter); empty, the queue has no delivery limit.
type CreateQueue struct {
	ReqID         uint64
	Queue         string
	Policy        Policy
	DedupWindow   time.Duration
	DeadLetter    string
	MaxDeliveries uint32
}

// Kind implements Message.
func (*CreateQueue) Kind() Kind { return KindCreateQueue }

// AppendBody implements Message. The optional fields come last and are
// written only when set (the window, then the dead-letter queue and its
// limit, which need the window written before them, zero if unset), so
// a request without them is the same frame an older client sends and an
// older node takes.
func (m *CreateQueue) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = AppendUint8(b, uint8(m.Policy))
	if m.DedupWindow != 0 || m.DeadLetter != "" || m.MaxDeliveries != 0 {
		b = AppendInt64(b, int64(m.DedupWindow))
	}
	if m.DeadLetter != "" || m.MaxDeliveries != 0 {
		b = AppendString(b, m.DeadLetter)
		b = AppendUint32(b, m.MaxDeliveries)
	}
	return b
}

// decodeCreateQueue reads a request with or without the optional
// fields: one from a client that predates them decodes with the
// defaults.
func decodeCreateQueue(d *Decoder) *CreateQueue {
	m := &CreateQueue{ReqID: d.Uint64(), Queue: d.String(), Policy: Policy(d.Uint8())}
	if d.More() {
		m.DedupWindow = time.Duration(d.Int64())
	}
	if d.More() {
		m.DeadLetter, m.MaxDeliveries = d.String(), d.Uint32()
	}
	return m
}

// DeleteQueue asks for a queue to be removed with everything in it.
type DeleteQueue struct {
	ReqID uint64
	Queue string
}

// Kind implements Message.
func (*DeleteQueue) Kind() Kind { return KindDeleteQueue }

// AppendBody implements Message.
func (m *DeleteQueue) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	return AppendString(b, m.Queue)
}

func decodeDeleteQueue(d *Decoder) *DeleteQueue {
	return &DeleteQueue{ReqID: d.Uint64(), Queue: d.String()}
}

// Publish adds a message to a queue. With a positive Delay the message
// becomes deliverable only once that much time has passed on the owner's
// clock.
type Publish struct {
	ReqID   uint64
	Queue   string
	ID      MessageID
	Delay   time.Duration
	Payload []byte
}

// Kind implements Message.
func (*Publish) Kind() Kind { return KindPublish }

// AppendBody implements Message.
func (m *Publish) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = appendMessageID(b, m.ID)
	b = AppendInt64(b, int64(m.Delay))
	return AppendBytes(b, m.Payload)
}

func (m *Publish) bodySizeMax() int { return 40 + len(m.Queue) + len(m.Payload) }

func decodePublish(d *Decoder) *Publish {
	return &Publish{ReqID: d.Uint64(), Queue: d.String(), ID: d.messageID(), Delay: time.Duration(d.Int64()), Payload: d.Bytes()}
}

// String describes the request without its payload.
func (m *Publish) String() string {
	return fmt.Sprintf("{req=%d q=%s id=%s delay=%v bytes=%d}", m.ReqID, m.Queue, m.ID, m.Delay, len(m.Payload))
}

// Subscribe asks for deliveries from a queue on this connection. At most
// Window deliveries are unsettled at once; each is leased for Lease, after
// which it is delivered again.
type Subscribe struct {
	ReqID  uint64
	Queue  string
	Window uint32
	Lease  time.Duration
}

// Kind implements Message.
func (*Subscribe) Kind() Kind { return KindSubscribe }

// AppendBody implements Message.
func (m *Subscribe) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = AppendUint32(b, m.Window)
	return AppendInt64(b, int64(m.Lease))
}

func decodeSubscribe(d *Decoder) *Subscribe {
	return &Subscribe{ReqID: d.Uint64(), Queue: d.String(), Window: d.Uint32(), Lease: time.Duration(d.Int64())}
}

// Unsubscribe ends the sender's subscription to a queue on this
// connection: the node stops delivering and hands the messages it leased
// to the subscription back to the queue at once.
type Unsubscribe struct {
	ReqID uint64
	Queue string
}

// Kind implements Message.
func (*Unsubscribe) Kind() Kind { return KindUnsubscribe }

// AppendBody implements Message.
func (m *Unsubscribe) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	return AppendString(b, m.Queue)
}

func decodeUnsubscribe(d *Decoder) *Unsubscribe {
	return &Unsubscribe{ReqID: d.Uint64(), Queue: d.String()}
}

// Settle acks (settles for good) or nacks (asks for redelivery) a
// delivery, named by its message ID and lease number.
type Settle struct {
	ReqID uint64
	Queue string
	ID    MessageID
	Lease uint64
	Nack  bool
}

// Kind implements Message.
func (*Settle) Kind() Kind { return KindSettle }

// AppendBody implements Message.
func (m *Settle) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = appendMessageID(b, m.ID)
	b = AppendUint64(b, m.Lease)
	return AppendBool(b, m.Nack)
}

func decodeSettle(d *Decoder) *Settle {
	return &Settle{ReqID: d.Uint64(), Queue: d.String(), ID: d.messageID(), Lease: d.Uint64(), Nack: d.Bool()}
}

// MaxExtend bounds how far one Extend may push a lease: twelve hours,
// the longest visibility timeout Amazon SQS allows, so the SQS endpoint
// can map ChangeMessageVisibility onto Extend without a bound of its own.
const MaxExtend = 12 * time.Hour

// Extend keeps a delivery leased for longer without settling it: the
// owner sets the lease, named by the message ID and lease number, to run
// out For from when it takes the request, on its own clock. A consumer
// that needs more time than the subscription's lease sends it before
// the lease runs out, as often as it needs to.
type Extend struct {
	ReqID uint64
	Queue string
	ID    MessageID
	Lease uint64
	For   time.Duration
}

// Kind implements Message.
func (*Extend) Kind() Kind { return KindExtend }

// AppendBody implements Message.
func (m *Extend) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendString(b, m.Queue)
	b = appendMessageID(b, m.ID)
	b = AppendUint64(b, m.Lease)
	return AppendInt64(b, int64(m.For))
}

func decodeExtend(d *Decoder) *Extend {
	return &Extend{ReqID: d.Uint64(), Queue: d.String(), ID: d.messageID(), Lease: d.Uint64(), For: time.Duration(d.Int64())}
}

// String describes the extension.
func (m *Extend) String() string {
	return fmt.Sprintf("{req=%d q=%s id=%s lease=%d for=%v}", m.ReqID, m.Queue, m.ID, m.Lease, m.For)
}

// Reply answers any client request. Owner names the node to try next
// when Status is not-owner or fenced; Index is the log position of a
// confirmed publish or ack.
type Reply struct {
	ReqID  uint64
	Status Status
	Owner  uint32
	Index  uint64
	Detail string
	// Depth is the queue's depth, in the answer to a QueueInfo only.
	Depth *QueueDepth
}

// Kind implements Message.
func (*Reply) Kind() Kind { return KindReply }

// AppendBody implements Message.
func (m *Reply) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendUint8(b, uint8(m.Status))
	b = AppendUint32(b, m.Owner)
	b = AppendUint64(b, m.Index)
	b = AppendString(b, m.Detail)
	if d := m.Depth; d != nil {
		// Only an answer to QueueInfo carries it, and only clients that
		// send QueueInfo read it: older ones never see the longer frame.
		for _, v := range []uint32{d.Ready, d.Leased, d.Delayed, d.DeadLettering, d.Consumers} {
			b = AppendUint32(b, v)
		}
	}
	return b
}

func decodeReply(d *Decoder) *Reply {
	r := &Reply{ReqID: d.Uint64(), Status: Status(d.Uint8()), Owner: d.Uint32(), Index: d.Uint64(), Detail: d.String()}
	if d.More() {
		r.Depth = &QueueDepth{Ready: d.Uint32(), Leased: d.Uint32(), Delayed: d.Uint32(), DeadLettering: d.Uint32(), Consumers: d.Uint32()}
	}
	return r
}

// QueueDepth counts a queue's unsettled messages by where they stand, and
// its owner's subscriptions, as an answer to QueueInfo reports them.
type QueueDepth struct {
	Ready, Leased, Delayed, DeadLettering, Consumers uint32
}

// QueueInfo asks the owner of Queue for its depth; the OK reply carries
// it in Reply.Depth.
type QueueInfo struct {
	ReqID uint64
	Queue string
}

// Kind implements Message.
func (*QueueInfo) Kind() Kind { return KindQueueInfo }

// AppendBody implements Message.
func (m *QueueInfo) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	return AppendString(b, m.Queue)
}

func decodeQueueInfo(d *Decoder) *QueueInfo {
	return &QueueInfo{ReqID: d.Uint64(), Queue: d.String()}
}

// Delivery hands a message to a subscriber under a lease.
type Delivery struct {
	Queue   string
	ID      MessageID
	Lease   uint64
	Attempt uint32
	Payload []byte
}

// Kind implements Message.
func (*Delivery) Kind() Kind { return KindDelivery }

// AppendBody implements Message.
func (m *Delivery) AppendBody(b []byte) []byte {
	b = AppendString(b, m.Queue)
	b = appendMessageID(b, m.ID)
	b = AppendUint64(b, m.Lease)
	b = AppendUint32(b, m.Attempt)
	return AppendBytes(b, m.Payload)
}

func (m *Delivery) bodySizeMax() int { return 36 + len(m.Queue) + len(m.Payload) }

func decodeDelivery(d *Decoder) *Delivery {
	return &Delivery{Queue: d.String(), ID: d.messageID(), Lease: d.Uint64(), Attempt: d.Uint32(), Payload: d.Bytes()}
}

// String describes the delivery without its payload.
func (m *Delivery) String() string {
	return fmt.Sprintf("{q=%s id=%s lease=%d attempt=%d bytes=%d}", m.Queue, m.ID, m.Lease, m.Attempt, len(m.Payload))
}

// String describes the reply.
func (m *Reply) String() string {
	return fmt.Sprintf("{req=%d %s owner=%d index=%d %q}", m.ReqID, m.Status, m.Owner, m.Index, m.Detail)
}

// String describes the settle.
func (m *Settle) String() string {
	return fmt.Sprintf("{req=%d q=%s id=%s lease=%d nack=%t}", m.ReqID, m.Queue, m.ID, m.Lease, m.Nack)
}

// String describes the subscription request.
func (m *Subscribe) String() string {
	return fmt.Sprintf("{req=%d q=%s window=%d lease=%v}", m.ReqID, m.Queue, m.Window, m.Lease)
}

// String describes the request; the window only when it is set, so a
// request without one reads as it did before windows.
func (m *CreateQueue) String() string {
	if m.DedupWindow != 0 {
		return fmt.Sprintf("{req=%d q=%s policy=%s dedup-window=%v}", m.ReqID, m.Queue, m.Policy, m.DedupWindow)
	}
	return fmt.Sprintf("{req=%d q=%s policy=%s}", m.ReqID, m.Queue, m.Policy)
}

// SetDetection changes the cluster's failure detection policy. Any node
// takes it; it is a metadata command, so every node switches together.
type SetDetection struct {
	ReqID    uint64
	Mode     uint8 // 1 heartbeat, 2 eager
	Interval time.Duration
	Grace    time.Duration
}

// Kind implements Message.
func (*SetDetection) Kind() Kind { return KindSetDetection }

// AppendBody implements Message.
func (m *SetDetection) AppendBody(b []byte) []byte {
	b = AppendUint64(b, m.ReqID)
	b = AppendUint8(b, m.Mode)
	b = AppendInt64(b, int64(m.Interval))
	return AppendInt64(b, int64(m.Grace))
}

func decodeSetDetection(d *Decoder) *SetDetection {
	return &SetDetection{ReqID: d.Uint64(), Mode: d.Uint8(), Interval: time.Duration(d.Int64()), Grace: time.Duration(d.Int64())}
}

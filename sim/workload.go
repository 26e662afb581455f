package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/wire"
)

// Workload is what the simulated clients do: which queues exist, how many
// producers and consumers there are, and how they behave. It is part of
// the scenario, drawn from the seed like the faults.
type Workload struct {
	Queues    []QueueSpec
	Producers int
	Consumers int
	// PublishEvery is the pause between one producer's publishes.
	PublishEvery netsim.Latency
	PayloadMax   int
	// DelayChance is the chance a publish is delayed, by up to DelayMax.
	DelayChance float64
	DelayMax    time.Duration
	// AckChance and NackChance split what a consumer does with a delivery
	// during the safety phase; the rest it ignores until the lease runs
	// out. In the calm phase it acks everything.
	AckChance, NackChance float64
	Lease                 time.Duration
	Window                uint32
	Think                 netsim.Latency // consumer processing time
	RequestTimeout        time.Duration
	// Quiet is the final stretch of the run in which clients start
	// nothing new, so replicas can converge before the checks.
	Quiet time.Duration
	// PublishLimit stops each producer after that many publishes (0: no
	// limit): a way to build a fixed backlog.
	PublishLimit int
	// ConsumeAt delays the consumers' first subscriptions, so producers
	// build a backlog before anyone consumes (0: they start together).
	ConsumeAt time.Duration
	// AckLinger is how long a consumer holds its acks before sending
	// them, so the acks of deliveries handled close together travel in
	// one batch, as the Go client's do under load (0: each goes at once).
	AckLinger time.Duration
	// ExtendChance is the share of deliveries a consumer works on for
	// longer than the lease during the safety phase: it extends the lease
	// at once, thinks for longer than the lease, then acks, nacks or
	// ignores the delivery as it would any other (0: it never extends).
	ExtendChance float64
	// AtOwnerChance is the share of acks, nacks and extensions a
	// consumer sends to the queue's current owner by the message's ID
	// and the owner's lease number (core's AckAtOwner, NackAtOwner and
	// ExtendAtOwner), as a gateway that did not receive the message does
	// (another node's SQS endpoint, a worker a consumer handed the
	// message to), rather than to the node that delivered it (0: none).
	AtOwnerChance float64
	// UnsubscribeEvery, when positive, is the mean pause between a
	// consumer's unsubscribes during the safety phase: it ends its
	// subscription to one queue (the node hands back its leases but the
	// extended ones) and subscribes again 20 to 300ms later.
	UnsubscribeEvery time.Duration
	// Purges is how many times the first producer purges a queue during
	// the safety phase, at times drawn over it (0: never; see purge.go).
	Purges int
	// Moves is how many times the first producer asks for a queue's
	// owner to hand it over during the safety phase (0: never; see
	// handoff.go).
	Moves int
	// DeadLetterChanges is how many times the first producer changes a
	// source queue's dead-letter setting during the safety phase (0:
	// never; see setdeadletter.go).
	DeadLetterChanges int
	// BadRequests is how many requests no node may take the first
	// producer sends during the safety phase (0: none; see
	// badrequests.go).
	BadRequests int
	// Churn is how many times the first producer creates a queue of its
	// own and deletes it again during the safety phase (0: never; see
	// churn.go).
	Churn int
	// ProbeAt, when positive, adds two probe clients on the first queue:
	// a fresh subscriber that subscribes at ProbeAt and acks everything,
	// and a publisher that publishes every 10ms from ProbeAt on. Failover
	// measurements time the first delivery and the first confirmed publish
	// they see.
	ProbeAt time.Duration
}

// QueueSpec is one queue of the workload. Dedup is the deduplication
// window it is created with; zero leaves it to the nodes' default (the
// scenario's Dedup). DeadLetter names the queue its messages move to
// after MaxDeliveries deliveries without an ack (empty: no limit).
type QueueSpec struct {
	Name          string
	Policy        wire.Policy
	Dedup         time.Duration
	DeadLetter    string
	MaxDeliveries uint32
	// MovesOnly says producers publish nothing to the queue: it holds
	// only what dead-lettering moves there. Its window may then be
	// shorter than the clients retry, since no client retry can meet it.
	MovesOnly bool
}

// String summarizes the workload on one line.
func (wl Workload) String() string {
	return fmt.Sprintf("queues=%d producers=%d consumers=%d every=%v payload<=%d delay=%.2f<=%v ack=%.2f nack=%.2f lease=%v window=%d consume-at=%v ack-linger=%v extend=%.2f purges=%d",
		len(wl.Queues), wl.Producers, wl.Consumers, wl.PublishEvery, wl.PayloadMax, wl.DelayChance, wl.DelayMax,
		wl.AckChance, wl.NackChance, wl.Lease, wl.Window, wl.ConsumeAt, wl.AckLinger, wl.ExtendChance, wl.Purges)
}

func drawWorkload(r *rand.Rand) *Workload {
	wl := &Workload{
		Producers: 1 + r.IntN(3),
		Consumers: 1 + r.IntN(3),
		PublishEvery: netsim.Latency{
			Min: time.Duration(2+r.IntN(10)) * time.Millisecond,
			Max: time.Duration(15+r.IntN(60)) * time.Millisecond,
		},
		PayloadMax:     pick(r, 64, 512, 4096),
		DelayChance:    pick(r, 0, 0, 0.05, 0.2),
		DelayMax:       time.Duration(50+r.IntN(1000)) * time.Millisecond,
		AckChance:      pick(r, 1, 0.9, 0.7),
		NackChance:     pick(r, 0, 0.05, 0.15),
		Lease:          time.Duration(100+r.IntN(900)) * time.Millisecond,
		Window:         uint32(1 + r.IntN(16)),
		Think:          netsim.Latency{Min: 0, Max: time.Duration(1+r.IntN(20)) * time.Millisecond},
		RequestTimeout: time.Duration(200+r.IntN(800)) * time.Millisecond,
		Quiet:          2 * time.Second,
		ConsumeAt:      pick(r, 0, 0, 0, 3*time.Second),
	}
	wl.NackChance = min(wl.NackChance, 1-wl.AckChance)
	wl.Window = max(wl.Window, wl.windowForCapacity())
	for i := range 1 + r.IntN(3) {
		wl.Queues = append(wl.Queues, QueueSpec{
			Name:   fmt.Sprintf("q%d", i),
			Policy: pick(r, wire.PolicyMajority, wire.PolicyMajority, wire.PolicyMajority, wire.PolicyAll, wire.PolicyOwnerOnly),
		})
	}
	return wl
}

// drawQueueDedup gives some of a generated scenario's queues a
// deduplication window of their own, from the scenario's dedup stream
// (one sequence per queue), so one cluster runs queues that forget IDs
// at different times. Three queues in four keep the nodes' default, so
// most scenarios run as they did before queues had windows. Like the
// scenario's draw, every window is longer than the simulated clients
// retry (3s): a retry after the window is a new message by design.
func drawQueueDedup(seed uint64, wl *Workload) {
	for i := range wl.Queues {
		r := newStream(seed, streamDedup, uint64(i)+1)
		if r.IntN(4) == 0 {
			wl.Queues[i].Dedup = pick(r, 5*time.Second, 8*time.Second, 2*time.Minute)
		}
	}
}

// deadLetterQueue is the name of the dead-letter queue a generated
// scenario adds.
const deadLetterQueue = "dl"

// drawDeadLetter gives a third of the generated scenarios a dead-letter
// queue, from a stream of its own so that the other seeds run as they
// did. The queue is listed, and so created, last: the first queue stays
// the busiest, which faults aimed at "the first queue's owner" rely on,
// and a source queue created before its dead-letter queue exists is
// what the nodes must cope with anyway. Producers publish to it as to
// any other queue. Each other
// queue gets a delivery limit of 1 to 3 with even chance (the first
// always), and consumers nack at least one delivery in ten, so messages
// reach their limits during the safety phase; in the calm phase they ack
// everything, and the dead-letter queue drains like the rest.
func drawDeadLetter(seed uint64, wl *Workload) {
	r := newStream(seed, streamDeadLetter)
	if r.IntN(3) != 0 {
		return
	}
	for i := range wl.Queues {
		if i == 0 || r.IntN(2) == 0 {
			wl.Queues[i].DeadLetter, wl.Queues[i].MaxDeliveries = deadLetterQueue, uint32(1+r.IntN(3))
		}
	}
	dl := QueueSpec{Name: deadLetterQueue, Policy: pick(r, wire.PolicyMajority, wire.PolicyAll)}
	if newStream(seed, streamDeadLetter, 1).IntN(2) == 0 {
		// Half the dead-letter queues take only moves and forget IDs
		// after a second, so a move asked for again after a failover of
		// its source finds the window gone and only the ledger of moves
		// between it and a second copy of the message.
		dl.MovesOnly, dl.Dedup = true, wire.MinDedupWindow
	}
	wl.Queues = append(wl.Queues, dl)
	wl.NackChance = max(wl.NackChance, 0.1)
	wl.AckChance = min(wl.AckChance, 1-wl.NackChance)
}

// drawUnsubscribeEvery draws, for a quarter of the generated scenarios,
// how often consumers unsubscribe, from a stream of its own so that the
// other seeds run as they did.
func drawUnsubscribeEvery(seed uint64) time.Duration {
	return pick(newStream(seed, streamUnsubscribe), 0, 0, 0, 700*time.Millisecond)
}

// drawAckLinger draws how long consumers hold their acks, from a stream
// of its own so that adding it changed no other draw.
func drawAckLinger(seed uint64) time.Duration {
	return pick(newStream(seed, streamAckLinger), 0, 0, 2*time.Millisecond, 10*time.Millisecond)
}

// drawExtendChance draws the share of deliveries consumers extend, from
// a stream of its own so that adding it changed no other draw.
func drawExtendChance(seed uint64) float64 {
	return pick(newStream(seed, streamExtend), 0, 0, 0.1, 0.3)
}

// drawAtOwner draws the share of settles and extensions sent at the
// owner: none in three seeds of five.
func drawAtOwner(seed uint64) float64 {
	return pick(newStream(seed, streamAtOwner), 0, 0, 0, 0.25, 0.6)
}

// windowForCapacity is the smallest subscription window that lets the
// consumers settle messages at least twice as fast as producers publish
// them, so a backlog built during the safety phase can drain within the
// liveness bound. A settle costs a round trip and a confirmation (about
// 10ms here) plus the consumer's thinking time.
func (wl *Workload) windowForCapacity() uint32 {
	perSecond := float64(wl.Producers) / ((wl.PublishEvery.Min + wl.PublishEvery.Max).Seconds() / 2)
	settle := 10*time.Millisecond + wl.Think.Max
	need := 2 * perSecond * settle.Seconds() / float64(wl.Consumers)
	return uint32(need) + 1
}

// streamWideWindow draws which generated scenarios' consumers subscribe
// with a wide window (drawWideWindow).
const streamWideWindow = "wide-window"

// drawWideWindow gives, in an eighth of the generated queue scenarios, the
// consumers a wide window of 512 (the Go client's default when this was
// written; 1,024 since) rather than the few drawn with the workload: a
// subscriber that finds a backlog (a late consumer, or a new owner's
// resubscribed ones) is then owed more deliveries than one pump of the
// owner hands out, and the rest must follow at the ends of its turns. It
// draws from its own stream, so that no other draw moves.
func drawWideWindow(seed uint64, wl *Workload) {
	if newStream(seed, streamWideWindow).IntN(8) == 0 {
		wl.Window = 512
	}
}

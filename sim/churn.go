package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/wire"
)

// Queue churn. In three seeds of five the first producer also creates
// queues of its own and deletes each again 50 to 500 ms later, a drawn
// number of times during the safety phase, so a queue's whole life
// (preparing its replicas on every member, activating, deleting, every
// member retiring its replica) runs through the same crashes,
// partitions and disk faults as the rest. No one publishes to them:
// what is judged is that replicas go with their queue (queue-lifecycle).
// Each cycle names its own queue: a name made again is a new incarnation,
// which the replica checkers, keyed by name, cannot yet tell from the
// old one. The draws come from a stream of their own, so seeds without
// churn draw what they drew before churn existed.

// streamQueueChurn draws how many cycles a generated scenario runs and,
// for the churning client, when and for how long each queue lives.
const streamQueueChurn = "queue-churn"

// churnPrefix begins the name of each churned queue. It sorts after
// every other queue of the workload, so a node walking its replicas and
// the metadata's queues side by side meets them last.
const churnPrefix = "zchurn-"

// churnFrom is when cycles may start: after the workload's queues are
// created and the producers have begun.
const churnFrom = 1500 * time.Millisecond

// maxChurn bounds the cycles a scenario file may ask for.
const maxChurn = 1000

// drawChurn draws how many create-and-delete cycles a generated workload
// runs: none in two seeds of five.
func drawChurn(seed uint64) int {
	return pick(newStream(seed, streamQueueChurn), 0, 0, 1, 2, 4)
}

// IsChurnQueue reports whether queue is one the churning client makes
// and deletes.
func IsChurnQueue(queue string) bool { return strings.HasPrefix(queue, churnPrefix) }

// scheduleChurn has client c run the workload's cycles, each at a time
// drawn over the safety phase, the k-th on queue zchurn-k.
func (c *clientProc) scheduleChurn() {
	k := 0
	c.scheduleDrawn(streamQueueChurn, c.w.sc.Workload.Churn, churnFrom, func(r *rand.Rand) func() {
		k++
		name := churnPrefix + strconv.Itoa(k)
		life := 50*time.Millisecond + time.Duration(r.Int64N(int64(450*time.Millisecond)))
		return func() {
			c.churnOp("create", name)
			c.w.schedule(c.w.now+life, -1, 0, func() { c.churnOp("delete", name) })
		}
	})
}

// churnOp creates or deletes queue, unless the run has reached its calm
// phase.
func (c *clientProc) churnOp(kind, queue string) {
	if c.w.Live() || c.quiet() {
		return
	}
	var id core.OpID
	if kind == "create" {
		id = c.core.CreateQueue(c.now(), queue, wire.PolicyMajority)
	} else {
		id = c.core.DeleteQueue(c.now(), queue)
	}
	c.invoked(id, kind, queue, noID, 0)
	c.flush()
}

package live

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// queueCollector reports per-queue gauges at scrape time, from the same
// view of the node's queues as /status: how much of each queue's log the
// local replica retains, and where its checkpoints stand.
//
// It also exposes the instruments the runtime's event logger derives from
// node events (eventMetrics). The runtime builds its event logger after
// registering this collector, and hands it only the logger, so the
// registry reaches those instruments the way this collector reaches the
// queues: through the runtime, at scrape time.
type queueCollector struct {
	r            *Runtime
	descs        []*prometheus.Desc
	depthDescs   []*prometheus.Desc
	trafficDescs []*prometheus.Desc
	eventDescs   []*prometheus.Desc
}

// queueGauges names each per-queue gauge, in the order descs holds them.
var queueGauges = []struct {
	name, help string
}{
	{"cairn_queue_retained_bytes", "Bytes of log segments the local replica keeps."},
	{"cairn_queue_log_segments", "Log segment files the local replica keeps."},
	{"cairn_queue_first_index", "First record the local replica's log retains."},
	{"cairn_queue_last_index", "Last record of the local replica's log."},
	{"cairn_queue_checkpoint_index", "Cut of the local replica's newest checkpoint (0: none)."},
	{"cairn_queue_checkpoint_bytes", "Size of the state the local replica's newest checkpoint holds."},
	{"cairn_queue_certified_index", "Newest checkpoint cut the metadata certified (0: none)."},
	{"cairn_queue_checkpoint_age_seconds", "How long ago the local replica made its newest checkpoint (0: none or unknown)."},
}

// depthGauges are reported by the queue's serving owner only: the other
// replicas do not know the backlog.
var depthGauges = []struct {
	name, help string
}{
	{"cairn_queue_ready_messages", "Messages waiting for a subscriber (serving owner only)."},
	{"cairn_queue_leased_messages", "Messages delivered under a lease not yet settled (serving owner only)."},
	{"cairn_queue_delayed_messages", "Messages waiting for their delay to pass (serving owner only)."},
	{"cairn_queue_consumers", "Subscriptions the owner serves (serving owner only)."},
}

// trafficCounters count each queue's client traffic through this node
// since its process started (trafficCounts); rate() over them gives the
// dashboard's rates.
var trafficCounters = []struct {
	name, help string
}{
	{"cairn_queue_publish_requests_total", "Publish requests for the queue this node handed to its node."},
	{"cairn_queue_deliveries_total", "Deliveries of the queue's messages this node sent."},
	{"cairn_queue_acks_total", "Acks of the queue's messages this node received."},
	{"cairn_queue_nacks_total", "Nacks of the queue's messages this node received."},
}

// queueScrapeWait bounds how long a scrape waits for a busy node.
const queueScrapeWait = time.Second

// newQueueCollector builds the scrape-time collector of r's queues and
// event instruments.
func newQueueCollector(r *Runtime) *queueCollector {
	c := &queueCollector{r: r, eventDescs: eventDescs()}
	for _, g := range queueGauges {
		c.descs = append(c.descs, prometheus.NewDesc(g.name, g.help, []string{"queue"}, nil))
	}
	for _, g := range depthGauges {
		c.depthDescs = append(c.depthDescs, prometheus.NewDesc(g.name, g.help, []string{"queue"}, nil))
	}
	for _, g := range trafficCounters {
		c.trafficDescs = append(c.trafficDescs, prometheus.NewDesc(g.name, g.help, []string{"queue"}, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range slices.Concat(c.descs, c.depthDescs, c.trafficDescs, c.eventDescs) {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A node too busy to answer in
// time contributes no queue series to this scrape; the event instruments
// are read without the node's goroutine, so they are always reported.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if l := c.r.events; l != nil {
		l.metrics.Collect(ch)
	}
	c.collectQueues(ch)
}

// collectQueues reports the per-queue gauges of every replica the node
// serves in some role.
func (c *queueCollector) collectQueues(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueScrapeWait)
	defer cancel()
	for _, q := range c.r.status(ctx).Queues {
		if q.Role == "none" {
			continue
		}
		values := []float64{float64(q.RetainedBytes), float64(q.Segments), float64(q.FirstIndex), float64(q.LastIndex),
			float64(q.CheckpointIndex), float64(q.CheckpointBytes), float64(q.CertifiedIndex), q.CheckpointAgeSeconds}
		for i, v := range values {
			ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, v, q.Name)
		}
		if d := q.Depth; d != nil {
			for i, v := range []int{d.Ready, d.Leased, d.Delayed, d.Consumers} {
				ch <- prometheus.MustNewConstMetric(c.depthDescs[i], prometheus.GaugeValue, float64(v), q.Name)
			}
		}
		if tr := q.Traffic; tr != nil {
			for i, v := range []uint64{tr.Published, tr.Delivered, tr.Acked, tr.Nacked} {
				ch <- prometheus.MustNewConstMetric(c.trafficDescs[i], prometheus.CounterValue, float64(v), q.Name)
			}
		}
	}
}

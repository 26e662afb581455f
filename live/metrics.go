package live

import (
	"github.com/cairnmq/cairn/event"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are one node's Prometheus instruments. Each runtime has its own
// registry, so several nodes can run in one process (the dev cluster)
// without their series colliding.
type metrics struct {
	reg *prometheus.Registry

	events      *prometheus.CounterVec // node events by name
	dropped     *prometheus.CounterVec // outgoing frames dropped, by side and reason
	recvDropped prometheus.Counter     // a peer's queue traffic dropped on arrival for want of room
	closed      *prometheus.CounterVec // connections closed, by side and reason class
	refused     *prometheus.CounterVec // handshakes refused, by side
	limited     *prometheus.CounterVec // connections refused at a limit, by side and limit
	denied      *prometheus.CounterVec // requests refused for want of the admin role, by kind
	framesIn    *prometheus.CounterVec // frames received, by side
	framesOut   *prometheus.CounterVec // frames written, by side
	bytesIn     *prometheus.CounterVec // frame bytes received, by side
	bytesOut    *prometheus.CounterVec // bytes written to connections, by side
	connsOpen   *prometheus.GaugeVec   // open connections, by side
	peersUp     prometheus.Gauge       // connsOpen's peer series
	clients     prometheus.Gauge       // connsOpen's client series
	syncs       prometheus.Counter
	syncErrors  prometheus.Counter
	syncSeconds prometheus.Histogram
	inbox       prometheus.Gauge
}

// newMetrics builds and registers one node's transport, sync and
// process instruments in a registry of their own.
func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:     reg,
		events:  counterVec("cairn_node_events_total", "Events the node emitted, by name.", "event"),
		dropped: counterVec("cairn_send_dropped_total", "Outgoing frames dropped instead of blocking the node, by side and reason.", "side", "reason"),
		recvDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_receive_dropped_total",
			Help: "Queue traffic from peers dropped on arrival because the node's inbox was full (control traffic is never dropped)."}),
		closed:    counterVec("cairn_connections_closed_total", "Connections closed, by side and reason.", "side", "reason"),
		refused:   counterVec("cairn_handshakes_refused_total", "Connections refused before authenticating (limits, TLS or the session handshake), by side.", "side"),
		limited:   counterVec("cairn_connections_limited_total", "Connections refused because a limit was reached, by side and limit.", "side", "limit"),
		denied:    counterVec("cairn_requests_denied_total", "Client requests refused because they need the admin role, by kind.", "kind"),
		framesIn:  counterVec("cairn_frames_received_total", "Wire frames received, by side.", "side"),
		framesOut: counterVec("cairn_frames_sent_total", "Wire frames written, by side.", "side"),
		bytesIn:   counterVec("cairn_received_bytes_total", "Wire frame bytes received, headers included, by side.", "side"),
		bytesOut:  counterVec("cairn_sent_bytes_total", "Bytes written to connections, by side.", "side"),
		connsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cairn_connections_open",
			Help: "Authenticated connections open, by side (peer: established peer links; client: client and admin connections)."}, []string{"side"}),
		syncs:       prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_syncs_total", Help: "fsyncs completed."}),
		syncErrors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_sync_errors_total", Help: "fsyncs that failed."}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cairn_sync_seconds", Help: "fsync latency.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		inbox:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_inbox_depth", Help: "Events waiting for the node's goroutine, sampled when one is handled."}),
	}
	m.peersUp, m.clients = m.connsOpen.WithLabelValues(sidePeer), m.connsOpen.WithLabelValues(sideClient)
	reg.MustRegister(m.events, m.dropped, m.recvDropped, m.closed, m.refused, m.limited, m.denied, m.framesIn, m.framesOut,
		m.bytesIn, m.bytesOut, m.connsOpen, m.syncs, m.syncErrors, m.syncSeconds, m.inbox,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// counterVec builds a counter vector with the given labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Sides of the transport, used as label values.
const (
	sidePeer   = "peer"
	sideClient = "client"
	sideHTTP   = "http"
)

// recoveryBuckets span a recovery stage or attempt from tens of
// microseconds (a seal answered from an idle local disk) to tens of
// seconds (a long transfer, or an attempt that waited out a silent
// source): 20µs, doubling, up to about 21s.
var recoveryBuckets = prometheus.ExponentialBuckets(20e-6, 2, 21)

// eventMetrics are the instruments derived from the node's events rather
// than from the transport: recovery timings, the failure detector's
// verdicts and metadata elections. The event logger holds them, since it
// sees every event on the node's goroutine in the order the node emitted
// them, and the runtime's scrape-time collector exposes them
// (queueCollector).
type eventMetrics struct {
	stageSeconds    *prometheus.HistogramVec // recovery stages, by stage and outcome
	recoverySeconds *prometheus.HistogramVec // recovery attempts, by outcome
	suspicions      *prometheus.CounterVec   // peers this node suspected, by peer
	confirmations   *prometheus.CounterVec   // suspicions this node confirmed, by peer
	flaps           *prometheus.CounterVec   // confirmed peers heard again with no reset, by peer
	elections       prometheus.Counter       // times this node became metadata leader
}

// newEventMetrics builds a fresh, unregistered set of event instruments.
// Their descriptors depend only on the options below, so any two sets
// describe alike (see eventDescs).
func newEventMetrics() *eventMetrics {
	return &eventMetrics{
		stageSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_recovery_stage_seconds",
			Help:    "Duration of each owner-recovery stage this node ran, by stage and how it ended.",
			Buckets: recoveryBuckets,
		}, []string{"stage", "outcome"}),
		recoverySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_recovery_seconds",
			Help:    "Duration of each owner-recovery attempt this node ran, by how it ended.",
			Buckets: recoveryBuckets,
		}, []string{"outcome"}),
		suspicions:    counterVec("cairn_detector_suspicions_total", "Times this node's failure detector suspected a silent peer, by peer.", "peer"),
		confirmations: counterVec("cairn_detector_confirmations_total", "Times this node's failure detector confirmed a suspicion, by peer.", "peer"),
		flaps: counterVec("cairn_detector_flaps_total",
			"Times a peer this node had confirmed down answered again with no connection reset (it stalled, it did not die), by peer; such a peer is allowed a longer silence for a while.", "peer"),
		elections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_meta_leader_elections_total",
			Help: "Times this node became metadata leader.",
		}),
	}
}

// collectors lists the instruments, for Describe and Collect.
func (m *eventMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.stageSeconds, m.recoverySeconds, m.suspicions, m.confirmations, m.flaps, m.elections}
}

// Describe implements prometheus.Collector.
func (m *eventMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *eventMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// observe counts what ev says on its own. The duration of a whole
// recovery attempt needs the attempt's start as well, so recoveryLog
// observes recoverySeconds.
func (m *eventMetrics) observe(ev event.Event) {
	switch ev.Name {
	case event.RecoveryStage:
		m.stageSeconds.WithLabelValues(ev.Stage(), ev.Outcome()).Observe(ev.Elapsed().Seconds())
	case event.DetectSuspect:
		m.suspicions.WithLabelValues(event.NodeName(ev.Node())).Inc()
	case event.DetectConfirm:
		m.confirmations.WithLabelValues(event.NodeName(ev.Node())).Inc()
	case event.DetectFlapped:
		m.flaps.WithLabelValues(event.NodeName(ev.Node())).Inc()
	case event.MetaLeader:
		m.elections.Inc()
	}
}

// eventDescs returns the descriptors of the event instruments. The
// registry asks for them when the runtime's collector is registered,
// before the event logger that holds the live instruments exists; a
// fresh set describes them exactly, since descriptors depend only on
// names, help and labels.
func eventDescs() []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() {
		newEventMetrics().Describe(ch)
		close(ch)
	}()
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	return descs
}

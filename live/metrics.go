package live

import (
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
	closed      *prometheus.CounterVec // connections closed, by side and reason class
	refused     *prometheus.CounterVec // handshakes refused, by side
	limited     *prometheus.CounterVec // connections refused at a limit, by side and limit
	denied      *prometheus.CounterVec // requests refused for want of the admin role, by kind
	framesIn    *prometheus.CounterVec // frames received, by side
	framesOut   *prometheus.CounterVec // frames written, by side
	peersUp     prometheus.Gauge
	clients     prometheus.Gauge
	syncs       prometheus.Counter
	syncErrors  prometheus.Counter
	syncSeconds prometheus.Histogram
	inbox       prometheus.Gauge
}

func newMetrics() *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:         reg,
		events:      counterVec("cairn_node_events_total", "Events the node emitted, by name.", "event"),
		dropped:     counterVec("cairn_send_dropped_total", "Outgoing frames dropped instead of blocking the node, by side and reason.", "side", "reason"),
		closed:      counterVec("cairn_connections_closed_total", "Connections closed, by side and reason.", "side", "reason"),
		refused:     counterVec("cairn_handshakes_refused_total", "Connections refused before authenticating (limits, TLS or the session handshake), by side.", "side"),
		limited:     counterVec("cairn_connections_limited_total", "Connections refused because a limit was reached, by side and limit.", "side", "limit"),
		denied:      counterVec("cairn_requests_denied_total", "Client requests refused because they need the admin role, by kind.", "kind"),
		framesIn:    counterVec("cairn_frames_received_total", "Wire frames received, by side.", "side"),
		framesOut:   counterVec("cairn_frames_sent_total", "Wire frames written, by side.", "side"),
		peersUp:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_peers_connected", Help: "Peers with an established connection."}),
		clients:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_client_connections", Help: "Open client connections."}),
		syncs:       prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_syncs_total", Help: "fsyncs completed."}),
		syncErrors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "cairn_sync_errors_total", Help: "fsyncs that failed."}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cairn_sync_seconds", Help: "fsync latency.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)}),
		inbox:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_inbox_depth", Help: "Events waiting for the node's goroutine, sampled when one is handled."}),
	}
	reg.MustRegister(m.events, m.dropped, m.closed, m.refused, m.limited, m.denied, m.framesIn, m.framesOut,
		m.peersUp, m.clients, m.syncs, m.syncErrors, m.syncSeconds, m.inbox,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Sides of the transport, used as label values.
const (
	sidePeer   = "peer"
	sideClient = "client"
	sideHTTP   = "http"
)

package live

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// exportedFamily is one metric family a node exports. Lazy families
// have no series until what they count first happens (a refused
// handshake, a dropped frame), so a scrape may lack them; the registry
// still describes them.
type exportedFamily struct {
	typ  dto.MetricType
	lazy bool
}

// nodeFamilies lists every cairn_ family a node exports, with its type.
// The README's metrics table and the Grafana dashboard are checked
// against it, and TestMetricsFamiliesOfALiveNode checks it against a
// live node both ways, so none of the three can drift from the code.
var nodeFamilies = map[string]exportedFamily{
	// Per queue.
	"cairn_queue_messages":               {typ: dto.MetricType_GAUGE},
	"cairn_queue_consumers":              {typ: dto.MetricType_GAUGE},
	"cairn_queue_consumers_held_back":    {typ: dto.MetricType_GAUGE},
	"cairn_queue_replica_lag_records":    {typ: dto.MetricType_GAUGE},
	"cairn_queue_retained_bytes":         {typ: dto.MetricType_GAUGE},
	"cairn_queue_log_segments":           {typ: dto.MetricType_GAUGE},
	"cairn_queue_first_index":            {typ: dto.MetricType_GAUGE},
	"cairn_queue_last_index":             {typ: dto.MetricType_GAUGE},
	"cairn_queue_checkpoint_index":       {typ: dto.MetricType_GAUGE},
	"cairn_queue_checkpoint_bytes":       {typ: dto.MetricType_GAUGE},
	"cairn_queue_certified_index":        {typ: dto.MetricType_GAUGE},
	"cairn_queue_checkpoint_age_seconds": {typ: dto.MetricType_GAUGE},
	"cairn_queue_epoch":                  {typ: dto.MetricType_GAUGE},
	"cairn_queue_publish_requests_total": {typ: dto.MetricType_COUNTER},
	"cairn_queue_deliveries_total":       {typ: dto.MetricType_COUNTER},
	"cairn_queue_acks_total":             {typ: dto.MetricType_COUNTER},
	"cairn_queue_nacks_total":            {typ: dto.MetricType_COUNTER},
	"cairn_recovery_stage_seconds":       {typ: dto.MetricType_HISTOGRAM},
	"cairn_recovery_seconds":             {typ: dto.MetricType_HISTOGRAM},
	"cairn_detector_suspicions_total":    {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_detector_confirmations_total": {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_detector_flaps_total":         {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_meta_leader_elections_total":  {typ: dto.MetricType_COUNTER},
	"cairn_meta_role":                    {typ: dto.MetricType_GAUGE},
	"cairn_meta_term":                    {typ: dto.MetricType_GAUGE},
	"cairn_meta_commit_index":            {typ: dto.MetricType_GAUGE},
	"cairn_meta_applied_index":           {typ: dto.MetricType_GAUGE},
	"cairn_syncs_total":                  {typ: dto.MetricType_COUNTER},
	"cairn_sync_errors_total":            {typ: dto.MetricType_COUNTER},
	"cairn_sync_seconds":                 {typ: dto.MetricType_HISTOGRAM},
	"cairn_connections_open":             {typ: dto.MetricType_GAUGE},
	"cairn_received_bytes_total":         {typ: dto.MetricType_COUNTER},
	"cairn_sent_bytes_total":             {typ: dto.MetricType_COUNTER},
	"cairn_frames_received_total":        {typ: dto.MetricType_COUNTER},
	"cairn_frames_sent_total":            {typ: dto.MetricType_COUNTER},
	"cairn_connections_closed_total":     {typ: dto.MetricType_COUNTER},
	"cairn_send_dropped_total":           {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_receive_dropped_total":        {typ: dto.MetricType_COUNTER},
	"cairn_handshakes_refused_total":     {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_connections_limited_total":    {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_requests_denied_total":        {typ: dto.MetricType_COUNTER, lazy: true},
	"cairn_node_events_total":            {typ: dto.MetricType_COUNTER},
	"cairn_inbox_depth":                  {typ: dto.MetricType_GAUGE},
}

// scrapeFamilies reads and parses addr's /metrics.
func scrapeFamilies(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics of %s does not parse: %v", addr, err)
	}
	return fams
}

// labelled returns the sample of fam whose labels include every
// name=value pair given, or nil.
func labelled(fam *dto.MetricFamily, pairs ...string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.GetMetric() {
		var got []string
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if !slices.ContainsFunc(pairs, func(p string) bool { return !slices.Contains(got, p) }) {
			return m
		}
	}
	return nil
}

// described lists the names of the families registered on tn, read
// from their descriptors.
func described(tn *testNode) map[string]bool {
	descName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		tn.m.reg.Describe(ch)
		close(ch)
	}()
	out := map[string]bool{}
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// A live node's /metrics carries every family nodeFamilies lists, with
// its type, and no cairn_ family it does not list: per queue on the
// serving owner (depth by state, consumers, each follower's lag), the
// recovery histograms and detector counters on the node that took the
// queue over after its owner stopped, and the node's own syncs,
// connections, bytes and raft state. A deleted queue's series go with it.
func TestMetricsFamiliesOfALiveNode(t *testing.T) {
	nodes := dashboardCluster(t, HTTPAuthAdmin)
	fillQueue(t, nodes, "orders", 6)
	owner := ownerOf(t, nodes, "orders")
	c := dial(t, owner.ClientAddr())
	held := make(chan struct{}, 16)
	sub, err := c.Subscribe(ctxFor(t, 10*time.Second), "orders", func(ctx context.Context, d *client.Delivery) {
		select { // never settled: the message stays leased
		case held <- struct{}{}:
		default:
		}
	}, client.WithWindow(2))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	<-held
	<-held

	seen := map[string]*dto.MetricFamily{}
	waitFor(t, 10*time.Second, "the owner to report its backlog, consumer and followers", func() bool {
		fams := scrapeFamilies(t, owner.HTTPAddr())
		msgs := fams["cairn_queue_messages"]
		leased := labelled(msgs, "queue=orders", "state=leased")
		ready := labelled(msgs, "queue=orders", "state=ready")
		cons := labelled(fams["cairn_queue_consumers"], "queue=orders")
		lags := 0
		if f := fams["cairn_queue_replica_lag_records"]; f != nil {
			lags = len(f.GetMetric())
		}
		if leased == nil || ready == nil || cons == nil {
			return false
		}
		maps.Copy(seen, fams)
		return leased.GetGauge().GetValue() == 2 && ready.GetGauge().GetValue() == 4 &&
			cons.GetGauge().GetValue() == 1 && lags == 2
	})
	if role := labelled(seen["cairn_meta_role"], "role=leader"); role == nil {
		t.Errorf("cairn_meta_role has no leader series")
	}

	owner.stop(t)
	var heir *testNode
	waitFor(t, 30*time.Second, "another node to serve orders", func() bool {
		for _, tn := range nodes {
			if tn == owner {
				continue
			}
			for _, q := range tn.Status().Queues {
				if q.Name == "orders" && q.Active {
					heir = tn
					return true
				}
			}
		}
		return false
	})
	// The owner's stop closes the others' connections to it; a node
	// counts the close when its reader notices, which may come after the
	// heir reports its recovery.
	waitFor(t, 10*time.Second, "the heir to report its recovery, and a node the closed connections", func() bool {
		fams := scrapeFamilies(t, heir.HTTPAddr())
		maps.Copy(seen, fams)
		for _, tn := range nodes {
			if tn != owner && tn != heir {
				maps.Copy(seen, scrapeFamilies(t, tn.HTTPAddr()))
			}
		}
		return labelled(fams["cairn_recovery_seconds"], "outcome=ok") != nil && seen["cairn_connections_closed_total"] != nil
	})

	registered := described(heir)
	for name, want := range nodeFamilies {
		f := seen[name]
		switch {
		case f == nil && want.lazy:
			if !registered[name] {
				t.Errorf("%s is neither scraped nor registered", name)
			}
		case f == nil:
			t.Errorf("%s: not scraped", name)
		case f.GetType() != want.typ:
			t.Errorf("%s: type %v, want %v", name, f.GetType(), want.typ)
		}
	}
	for name := range seen {
		if _, ok := nodeFamilies[name]; strings.HasPrefix(name, "cairn_") && !ok {
			t.Errorf("%s is exported but not listed in nodeFamilies (nor in the README)", name)
		}
	}

	// Deleting the queue ends its series on the nodes that held it.
	admin, err := client.Dial(ctxFor(t, 5*time.Second), client.Options{Secret: testAdminSecret, Admin: true, RequestTimeout: 2 * time.Second}, heir.ClientAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.DeleteQueue(ctxFor(t, 10*time.Second), "orders"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deleted queue's series to go", func() bool {
		for _, f := range scrapeFamilies(t, heir.HTTPAddr()) {
			if labelled(f, "queue=orders") != nil {
				return false
			}
		}
		return true
	})
}

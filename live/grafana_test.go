package live

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// grafanaDashboard is the checked-in Grafana dashboard, relative to
// this package.
const grafanaDashboard = "../docs/grafana/cairn.json"

// grafanaPanel is the part of a Grafana panel the test reads; a row
// holds panels of its own.
type grafanaPanel struct {
	Title   string         `json:"title"`
	Type    string         `json:"type"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// grafanaQueries returns every query of the dashboard's panels and
// template variables, keyed by where it is.
func grafanaQueries(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(grafanaDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaDashboard, err)
	}
	out := map[string][]string{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				out["panel "+p.Title] = append(out["panel "+p.Title], tg.Expr)
			}
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			out["variable "+v.Name] = append(out["variable "+v.Name], v.Definition)
		}
	}
	return out
}

// exportedSeries reports whether a name in a query is one a node
// exports: a family of nodeFamilies, or a histogram's _bucket, _sum or
// _count series.
func exportedSeries(name string) bool {
	if _, ok := nodeFamilies[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if f, known := nodeFamilies[base]; ok && known && f.typ == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}

// The Grafana dashboard queries only metrics a node exports (so a
// renamed metric breaks this test, not the dashboard in silence), and it
// draws each thing an operator asks of it: depth, rates, consumers,
// replica lag, retained bytes, checkpoint age, recovery stages, syncs and
// their latency, connections, bytes, and the raft role and term.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	metricName := regexp.MustCompile(`\bcairn_[a-z0-9_]+`)
	used := map[string]bool{}
	for where, exprs := range grafanaQueries(t) {
		for _, expr := range exprs {
			if strings.TrimSpace(expr) == "" {
				t.Errorf("%s has an empty query", where)
			}
			for _, name := range metricName.FindAllString(expr, -1) {
				if !exportedSeries(name) {
					t.Errorf("%s queries %s, which no node exports: %s", where, name, expr)
				}
				used[name] = true
			}
		}
	}
	for _, want := range []string{
		"cairn_queue_messages", "cairn_queue_publish_requests_total", "cairn_queue_deliveries_total",
		"cairn_queue_acks_total", "cairn_queue_consumers", "cairn_queue_replica_lag_records",
		"cairn_queue_retained_bytes", "cairn_queue_checkpoint_age_seconds", "cairn_recovery_stage_seconds_bucket",
		"cairn_syncs_total", "cairn_sync_seconds_bucket", "cairn_connections_open", "cairn_received_bytes_total",
		"cairn_sent_bytes_total", "cairn_meta_role", "cairn_meta_term",
	} {
		if !used[want] {
			t.Errorf("the dashboard draws nothing from %s", want)
		}
	}
	if len(used) == 0 {
		t.Errorf("the dashboard queries no cairn metric at all")
	}
}

// The README's metrics table lists every family a node exports, so a
// metric added to the code and not to the table fails here.
func TestReadmeListsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range nodeFamilies {
		if !strings.Contains(string(raw), "`"+name+"`") {
			t.Errorf("the README does not list %s", name)
		}
	}
}

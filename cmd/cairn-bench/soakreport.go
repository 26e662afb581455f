package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/latency"
)

// soakRow is one periodic sample of a soak: the traffic so far and each
// node's footprint.
type soakRow struct {
	elapsed        time.Duration
	ElapsedSeconds float64 `json:"elapsed_s"`
	Confirmed      int     `json:"confirmed"`
	Acked          int     `json:"acked"`
	Failed         int     `json:"publish_failed"`
	Unknown        int     `json:"publish_unknown"`
	Backlog        int     `json:"backlog"` // confirmed - acked
	Owner          int     `json:"owner"`   // the node serving the queue, 0 if none did
	// EndToEndP50 and EndToEndP99 are the times from a publish's start to
	// its message's first delivery, of the messages first delivered since
	// the previous row, in milliseconds; null when none was timed.
	EndToEndP50 *float64     `json:"e2e_p50_ms"`
	EndToEndP99 *float64     `json:"e2e_p99_ms"`
	Nodes       []nodeSample `json:"nodes"`
}

// setEndToEnd sets the row's end-to-end percentiles from ds.
func (r *soakRow) setEndToEnd(ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	p50, p99 := millis(latency.Percentile(ds, 50)), millis(latency.Percentile(ds, 99))
	r.EndToEndP50, r.EndToEndP99 = &p50, &p99
}

// millis is d in milliseconds, rounded to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// msText prints an optional millisecond figure, or "-".
func msText(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// Column widths of a printed row: the traffic columns, then five per node.
const (
	rowTrafficFormat = "%8s %10s %10s %7s %7s %8s %5s %8s %8s"
	rowNodeFormat    = " | %12s %11s %5s %11s %5s"
)

// rowHeader is the header line of the printed rows for the given nodes.
func rowHeader(ids []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, rowTrafficFormat, "elapsed", "confirmed", "acked", "failed", "unknown", "backlog", "owner", "e2e p50", "e2e p99")
	for _, id := range ids {
		fmt.Fprintf(&b, rowNodeFormat, fmt.Sprintf("n%d disk B", id), "rss B", "fds", "heap B", "gor")
	}
	return b.String()
}

// format prints the row under rowHeader; what could not be measured
// prints as "-".
func (r soakRow) format() string {
	var b strings.Builder
	owner := "-"
	if r.Owner != 0 {
		owner = fmt.Sprintf("n%d", r.Owner)
	}
	fmt.Fprintf(&b, rowTrafficFormat, r.elapsed.Round(time.Second), fmt.Sprint(r.Confirmed), fmt.Sprint(r.Acked),
		fmt.Sprint(r.Failed), fmt.Sprint(r.Unknown), fmt.Sprint(r.Backlog), owner, msText(r.EndToEndP50), msText(r.EndToEndP99))
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, rowNodeFormat, n.DiskBytes, n.RSSBytes, n.FDs, n.HeapBytes, n.Goroutines)
	}
	return b.String()
}

// slope fits y = a + slope*x by least squares. ok is false with fewer
// than two points or when every x is the same, where no line is defined.
func slope(xs, ys []float64) (float64, bool) {
	if len(xs) != len(ys) || len(xs) < 2 {
		return 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}

// estimate is a fitted figure, or none when the rows could not define it.
type estimate struct {
	value float64
	ok    bool
}

// String prints the estimate signed and rounded, or "-".
func (e estimate) String() string {
	if !e.ok {
		return "-"
	}
	return fmt.Sprintf("%+.0f", e.value)
}

// MarshalJSON writes the estimate, or null.
func (e estimate) MarshalJSON() ([]byte, error) {
	if !e.ok {
		return []byte("null"), nil
	}
	return json.Marshal(math.Round(e.value*100) / 100)
}

// fitRows fits a node's series y against x over the rows after the
// first, which holds the cluster's start-up transient; rows where either
// was not measured are left out.
func fitRows(rows []soakRow, x func(soakRow) (float64, bool), y func(soakRow) (float64, bool)) estimate {
	var xs, ys []float64
	for _, r := range rows[min(1, len(rows)):] {
		xv, xok := x(r)
		yv, yok := y(r)
		if xok && yok {
			xs = append(xs, xv)
			ys = append(ys, yv)
		}
	}
	v, ok := slope(xs, ys)
	return estimate{v, ok}
}

// nodeTrend is how one node's footprint grew over a soak.
type nodeTrend struct {
	ID         int      `json:"id"`
	DiskPerMin estimate `json:"data_dir_bytes_per_min"`
	RSSPerMin  estimate `json:"rss_bytes_per_min"`
	DiskPerMsg estimate `json:"data_dir_bytes_per_confirmed"`
	RSSPerMsg  estimate `json:"rss_bytes_per_confirmed"`
	FinalDisk  reading  `json:"final_data_dir_bytes"`
	FinalRSS   reading  `json:"final_rss_bytes"`
}

// trends fits every node's data directory and RSS against time (per
// minute) and against the confirmed count (per confirmed message: what
// each message costs the node beyond the start-up, if it keeps it).
func trends(rows []soakRow) []nodeTrend {
	if len(rows) == 0 {
		return nil
	}
	minutes := func(r soakRow) (float64, bool) { return r.elapsed.Minutes(), true }
	confirmed := func(r soakRow) (float64, bool) { return float64(r.Confirmed), true }
	var out []nodeTrend
	for i, n := range rows[0].Nodes {
		disk := func(r soakRow) (float64, bool) { return float64(r.Nodes[i].DiskBytes.value), r.Nodes[i].DiskBytes.ok }
		rss := func(r soakRow) (float64, bool) { return float64(r.Nodes[i].RSSBytes.value), r.Nodes[i].RSSBytes.ok }
		last := rows[len(rows)-1].Nodes[i]
		out = append(out, nodeTrend{
			ID:         n.ID,
			DiskPerMin: fitRows(rows, minutes, disk),
			RSSPerMin:  fitRows(rows, minutes, rss),
			DiskPerMsg: fitRows(rows, confirmed, disk),
			RSSPerMsg:  fitRows(rows, confirmed, rss),
			FinalDisk:  last.DiskBytes,
			FinalRSS:   last.RSSBytes,
		})
	}
	return out
}

// soakSummary is the end of a soak: the trends, the messages and the
// verdict.
type soakSummary struct {
	Rows         int         `json:"rows"`
	FittedRows   int         `json:"fitted_rows"`
	Owner        int         `json:"owner"`         // the owner in the last row
	OwnerChanged bool        `json:"owner_changed"` // rows saw more than one owner
	Nodes        []nodeTrend `json:"nodes"`
	Confirmed    int         `json:"confirmed"`
	Unknown      int         `json:"publish_unknown"`
	Failed       int         `json:"publish_failed"`
	Delivered    int         `json:"delivered"` // distinct IDs
	Duplicates   int         `json:"duplicates"`
	Acked        int         `json:"acked"`
	AckFailed    int         `json:"ack_failed"`
	Lost         int         `json:"lost"` // confirmed, never delivered
	DrainSeconds float64     `json:"drain_s"`
	// EndToEnd summarizes, over the whole run, the time from a publish's
	// start to its message's first delivery; nil when nothing was timed.
	EndToEnd     *endToEndSummary `json:"e2e,omitempty"`
	Interrupted  bool             `json:"interrupted"`
	SubscribeErr string           `json:"subscribe_error,omitempty"`
}

// endToEndSummary is the distribution of end-to-end times, in
// milliseconds.
type endToEndSummary struct {
	Count  int     `json:"count"`
	Median float64 `json:"median_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

// setEndToEnd sets the summary's end-to-end distribution from ds.
func (s *soakSummary) setEndToEnd(ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	s.EndToEnd = &endToEndSummary{Count: len(ds), Median: millis(latency.Percentile(ds, 50)), P95: millis(latency.Percentile(ds, 95)),
		P99: millis(latency.Percentile(ds, 99)), Max: millis(ds[len(ds)-1])}
}

// summarize fills a summary's trends and owner from the rows.
func summarize(rows []soakRow) soakSummary {
	s := soakSummary{Rows: len(rows), FittedRows: max(0, len(rows)-1), Nodes: trends(rows)}
	for _, r := range rows {
		if r.Owner == 0 {
			continue
		}
		if s.Owner != 0 && r.Owner != s.Owner {
			s.OwnerChanged = true
		}
		s.Owner = r.Owner
	}
	return s
}

// print writes the summary as text.
func (s soakSummary) print(w io.Writer) {
	if s.FittedRows < 2 {
		fmt.Fprintf(w, "trends: %d rows, too few to fit (the first is left out as start-up); run longer or sample more often\n", s.Rows)
	} else {
		fmt.Fprintf(w, "trends over rows 2-%d (least-squares slopes, against elapsed minutes and against the confirmed count):\n", s.Rows)
	}
	fmt.Fprintf(w, "  %-5s %15s %15s %13s %13s %17s %13s\n", "node", "data dir B/min", "data dir B/msg", "RSS B/min", "RSS B/msg", "final data dir B", "final RSS B")
	for _, n := range s.Nodes {
		name := fmt.Sprintf("n%d", n.ID)
		if n.ID == s.Owner {
			name += "*"
		}
		fmt.Fprintf(w, "  %-5s %15s %15s %13s %13s %17s %13s\n", name, n.DiskPerMin, n.DiskPerMsg, n.RSSPerMin, n.RSSPerMsg, n.FinalDisk, n.FinalRSS)
	}
	for _, n := range s.Nodes {
		if n.ID != s.Owner {
			continue
		}
		changed := "in every row that saw one"
		if s.OwnerChanged {
			changed = "at the end, but the owner changed during the run"
		}
		fmt.Fprintf(w, "owner (*): n%d %s; its RSS %s B/min, %s B per confirmed message\n", n.ID, changed, n.RSSPerMin, n.RSSPerMsg)
	}
	fmt.Fprintf(w, "messages: %d confirmed; %d unknown and %d failed publishes (not checked); %d delivered (distinct IDs), "+
		"%d duplicate deliveries (at-least-once, not failures); %d acked, %d acks failed\n",
		s.Confirmed, s.Unknown, s.Failed, s.Delivered, s.Duplicates, s.Acked, s.AckFailed)
	fmt.Fprintf(w, "RPO: %d confirmed messages never delivered (judged after a drain of %.1fs)\n", s.Lost, s.DrainSeconds)
	if e := s.EndToEnd; e != nil {
		fmt.Fprintf(w, "end to end (a publish's start to its message's first delivery), %d messages: median %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
			e.Count, e.Median, e.P95, e.P99, e.Max)
	}
	if s.SubscribeErr != "" {
		fmt.Fprintf(w, "subscribing failed: %s\n", s.SubscribeErr)
	}
	if s.Interrupted {
		fmt.Fprintln(w, "interrupted before the duration was up")
	}
}

// jsonLine writes v as one JSON object on a line of its own, tagged with
// its kind, so that a soak's output can be read as JSON lines while it
// runs.
func jsonLine(w io.Writer, kind string, v any) {
	b, err := json.Marshal(map[string]any{"kind": kind, kind: v})
	if err != nil {
		// Every value written here marshals; failing to is a bug.
		panic(fmt.Sprintf("cairn-bench: marshalling a %s: %v", kind, err))
	}
	fmt.Fprintf(w, "%s\n", b)
}

package live

import (
	"context"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/cairnmq/cairn/live/status"
	"github.com/cairnmq/cairn/node"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler serves the node's operational endpoints:
//
//	/metrics       Prometheus metrics
//	/healthz       200 once the node serves, 503 while starting or draining
//	/status        the status document (package status) as JSON
//	/node          the same, as a small HTML page
//	/dashboard     the cluster dashboard (dashboard.go), where / leads
//	/debug/pprof/  Go's profiles, for admins only (pprof.go)
func (r *Runtime) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", r.serveHealth)
	mux.HandleFunc("GET /status", r.serveStatus)
	mux.HandleFunc("GET /node", r.servePage)
	r.routeDashboard(mux)
	r.routeProfiles(mux)
	return mux
}

func (r *Runtime) serveHealth(w http.ResponseWriter, _ *http.Request) {
	s := r.board.snapshot()
	switch {
	case s.Draining:
		http.Error(w, "draining", http.StatusServiceUnavailable)
	case !s.Started:
		http.Error(w, "starting", http.StatusServiceUnavailable)
	default:
		w.Write([]byte("ok\n"))
	}
}

func (r *Runtime) serveStatus(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	ctx, cancel := context.WithTimeout(req.Context(), statusWait)
	defer cancel()
	if err := enc.Encode(r.status(ctx)); err != nil {
		r.log.Debug("writing /status", slog.String("err", err.Error()))
	}
}

func (r *Runtime) servePage(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	ctx, cancel := context.WithTimeout(req.Context(), statusWait)
	defer cancel()
	if err := statusPage.Execute(w, r.status(ctx)); err != nil {
		r.log.Debug("writing status page", slog.String("err", err.Error()))
	}
}

var statusPage = template.Must(template.New("status").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>cairn n{{.ID}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .8em;text-align:left}
th{background:#f3f3f3}.up{color:#080}.down{color:#b00}
</style></head><body>
<h1>cairn node n{{.ID}}</h1>
<p>{{if .Draining}}<b class="down">draining</b>{{else if .Started}}<span class="up">serving</span>{{else}}starting{{end}}
 · {{.Clients}} client connection(s) · <a href="/dashboard">cluster dashboard</a> · <a href="/status">JSON</a> · <a href="/metrics">metrics</a></p>
<h2>Peers</h2>
<table><tr><th>node</th><th>peer address</th><th>connection</th></tr>
{{range .Peers}}<tr><td>{{if .HTTPAddr}}<a href="//{{.HTTPAddr}}/node">n{{.ID}}</a>{{else}}n{{.ID}}{{end}}</td><td>{{.Addr}}</td>
<td>{{if .Connected}}<span class="up">up</span>{{else}}<span class="down">down</span>{{end}}</td></tr>
{{else}}<tr><td colspan="3">single-node cluster</td></tr>{{end}}</table>
<h2>Queues</h2>
<p>metadata leader: {{if .MetaLeader}}n{{.MetaLeader}} (term {{.MetaTerm}}){{else}}unknown{{end}}</p>
<table><tr><th>queue</th><th>state</th><th>owner</th><th>epoch</th><th>replicas</th><th>this node</th><th>replica epoch</th><th>last index</th><th>commit</th></tr>
{{range .Queues}}<tr><td>{{.Name}}</td><td>{{.State}}</td><td>n{{.Owner}}</td><td>{{.Epoch}}</td><td>{{range $i, $n := .Replicas}}{{if $i}}, {{end}}n{{$n}}{{end}}</td>
<td>{{if .Fenced}}<span class="down">fenced: {{.Fenced}}</span>{{else if .NoQuorum}}<span class="down">owner, no quorum</span>{{else if .Resting}}<span class="up">owner, resting</span>{{else if .Active}}<span class="up">owner</span>{{else}}{{.Role}}{{end}}</td>
<td>{{.ReplicaEpoch}}</td><td>{{.LastIndex}}</td><td>{{if .Active}}{{.Commit}}{{end}}</td></tr>
{{else}}<tr><td colspan="9">no queues</td></tr>{{end}}</table>
</body></html>
`))

// Status returns the node's status document, as /status serves it.
func (r *Runtime) Status() status.Node {
	ctx, cancel := context.WithTimeout(context.Background(), statusWait)
	defer cancel()
	return r.status(ctx)
}

// statusWait bounds how long a status request waits for a busy node.
const statusWait = 2 * time.Second

// nodeViewer is a handler that can describe its queues and leadership;
// *node.Node is one.
type nodeViewer interface {
	Queues() []node.QueueView
	Meta() node.MetaView
}

// status builds the status document: the board, plus the node's own view
// of its queues and leader, asked of the node's goroutine (the only one
// allowed to read the node). A node too busy to answer before ctx ends,
// or already stopped, is reported without queues.
func (r *Runtime) status(ctx context.Context) status.Node {
	s := r.board.snapshot()
	s.Host = hostStatus(r.cfg.DataDir)
	v, ok := r.handler.(nodeViewer)
	if !ok {
		return s
	}
	type answer struct {
		queues  []node.QueueView
		traffic []*status.Traffic
		meta    node.MetaView
	}
	got := make(chan answer, 1)
	ask := func() {
		var a answer
		a.queues = v.Queues()
		a.traffic = r.readTraffic(a.queues)
		a.meta = v.Meta()
		got <- a
	}
	select {
	case r.inbox <- ask:
	case <-ctx.Done():
		return s
	case <-r.loopDone:
		return s
	}
	select {
	case a := <-got:
		s.MetaLeader, s.MetaTerm = uint32(a.meta.Leader), a.meta.Term
		s.MetaRole, s.MetaCommit, s.MetaApplied = a.meta.Role, a.meta.Commit, a.meta.Applied
		for i, q := range a.queues {
			qs := queueStatus(q)
			qs.Traffic = a.traffic[i]
			s.Queues = append(s.Queues, qs)
		}
	case <-ctx.Done():
	case <-r.loopDone:
	}
	return s
}

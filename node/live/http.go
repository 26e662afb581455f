package live

import (
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"

	"github.com/cairnmq/cairn/node/live/status"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpHandler serves the node's operational endpoints:
//
//	/metrics  Prometheus metrics
//	/healthz  200 once the node serves, 503 while starting or draining
//	/status   the status document (package status) as JSON
//	/         the same, as a small HTML page
func (r *Runtime) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", r.serveHealth)
	mux.HandleFunc("GET /status", r.serveStatus)
	mux.HandleFunc("GET /{$}", r.servePage)
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

func (r *Runtime) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.board.snapshot()); err != nil {
		r.log.Debug("writing /status", slog.String("err", err.Error()))
	}
}

func (r *Runtime) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPage.Execute(w, r.board.snapshot()); err != nil {
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
 · {{.Clients}} client connection(s) · <a href="/status">JSON</a> · <a href="/metrics">metrics</a></p>
<h2>Peers</h2>
<table><tr><th>node</th><th>peer address</th><th>connection</th></tr>
{{range .Peers}}<tr><td>{{if .HTTPAddr}}<a href="http://{{.HTTPAddr}}/">n{{.ID}}</a>{{else}}n{{.ID}}{{end}}</td><td>{{.Addr}}</td>
<td>{{if .Connected}}<span class="up">up</span>{{else}}<span class="down">down</span>{{end}}</td></tr>
{{else}}<tr><td colspan="3">single-node cluster</td></tr>{{end}}</table>
<h2>Queue replicas</h2>
<table><tr><th>queue</th><th>role</th><th>owner</th><th>replicas</th><th>epoch</th><th>last index</th><th>commit</th><th>state</th></tr>
{{range .Queues}}<tr><td>{{.Name}}</td><td>{{.Role}}</td><td>n{{.Owner}}</td><td>{{range $i, $n := .Replicas}}{{if $i}}, {{end}}n{{$n}}{{end}}</td>
<td>{{.Epoch}}</td><td>{{.LastIndex}}</td><td>{{if eq .Role "owner"}}{{.Commit}}{{end}}</td>
<td>{{if .Fenced}}<span class="down">fenced: {{.Fenced}}</span>{{else if .Active}}<span class="up">active</span>{{else if eq .Role "owner"}}starting{{else}}replicating{{end}}</td></tr>
{{else}}<tr><td colspan="8">no queues</td></tr>{{end}}</table>
</body></html>
`))

// Status returns the node's status document, as /status serves it.
func (r *Runtime) Status() status.Node { return r.board.snapshot() }

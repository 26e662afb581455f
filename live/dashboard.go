package live

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cairnmq/cairn/live/status"
)

// dashboardFiles are the cluster dashboard's page, style sheet and
// script, written by hand and served as they are: the page needs nothing
// from the network but this node, so it works offline and behind any
// firewall that lets an operator reach the node.
//
//go:embed dashboard
var dashboardFiles embed.FS

// Bounds on a gathering of the cluster's status.
const (
	// dashboardPeerWait bounds the wait for each peer's /status: a node
	// down, cut off or stopped costs the page this much, once, and the
	// page says which node it could not read.
	dashboardPeerWait = 1500 * time.Millisecond
	// dashboardReuse is how long a gathering serves every viewer before
	// the next one: however many pages poll, each peer is asked at most
	// about twice a second.
	dashboardReuse = 500 * time.Millisecond
)

// dashboard gathers the cluster view for /dashboard.json, one gathering
// at a time, and keeps the last one with the traffic sample the next
// one's rates are computed from.
type dashboard struct {
	r      *Runtime
	mu     sync.Mutex
	last   *status.Cluster
	sample *status.Sample
}

// routeDashboard adds the dashboard's routes to mux: the page at
// /dashboard (and / sends a browser there), its files under
// /dashboard/, and the cluster view at /dashboard.json. The HTTP port's
// credential check covers them like /status.
func (r *Runtime) routeDashboard(mux *http.ServeMux) {
	d := &dashboard{r: r}
	files, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux.Handle("GET /{$}", http.RedirectHandler("/dashboard", http.StatusFound))
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, req *http.Request) {
		setPageHeaders(w)
		http.ServeFileFS(w, req, files, "index.html")
	})
	mux.Handle("GET /dashboard/", http.StripPrefix("/dashboard/", pageFiles(http.FileServerFS(files))))
	mux.HandleFunc("GET /dashboard.json", d.serveJSON)
}

// setPageHeaders keeps the page from loading anything but its own
// files, and every browser from caching a stale copy across upgrades.
func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// pageFiles serves the dashboard's files with the page's headers.
func pageFiles(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setPageHeaders(w)
		next.ServeHTTP(w, req)
	})
}

// serveJSON writes the cluster view.
func (d *dashboard) serveJSON(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(d.cluster(req.Context())); err != nil {
		d.r.log.Debug("writing /dashboard.json", slog.String("err", err.Error()))
	}
}

// cluster returns the latest cluster view, gathering a new one if the
// last is older than dashboardReuse. Gatherings run one at a time, so a
// crowd of viewers costs the peers one request each per interval.
func (d *dashboard) cluster(ctx context.Context) *status.Cluster {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != nil && time.Since(d.last.At) < dashboardReuse {
		return d.last
	}
	// The view is shared by every viewer: a viewer who leaves mid-way
	// must not cut it short for the others (each read is bounded anyway).
	readings := status.Gather(context.WithoutCancel(ctx), d.r.statusTargets(), d.r.fetchStatus, dashboardPeerWait)
	d.last, d.sample = status.Build(uint32(d.r.id), time.Now(), readings, d.sample)
	return d.last
}

// statusTargets lists every member, this node included, with the HTTP
// address the configuration gives it.
func (r *Runtime) statusTargets() []status.Target {
	var out []status.Target
	for _, m := range r.cfg.Members {
		out = append(out, status.Target{ID: uint32(m.ID), HTTPAddr: m.HTTPAddr})
	}
	return out
}

// fetchStatus reads a member's status: this node's from itself, without
// a request, and a peer's from its HTTP port with the credential that
// port requires.
func (r *Runtime) fetchStatus(ctx context.Context, t status.Target) (*status.Node, error) {
	if t.ID == uint32(r.id) {
		s := r.status(ctx)
		return &s, nil
	}
	return status.HTTPFetch(r.peerHTTPAuth())(ctx, t)
}

// peerHTTPAuth is how this node proves itself to a peer's HTTP port,
// whose configuration matches its own: under TLS with its node
// certificate (which a peer accepts for /status), and with the secret
// the port asks for, the admin one where only admins may read.
func (r *Runtime) peerHTTPAuth() status.Auth {
	a := status.Auth{TLS: r.cfg.TLS}
	if r.cfg.HTTPAuth == HTTPAuthAdmin {
		a.Secret = r.cfg.AdminSecret
	} else {
		a.Secret = []byte(cmp.Or(string(r.cfg.ClientSecret), string(r.cfg.Secret), string(r.cfg.AdminSecret)))
	}
	return a
}

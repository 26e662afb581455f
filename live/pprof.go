package live

import (
	"net/http"
	"net/http/pprof"

	"github.com/cairnmq/cairn/session"
)

// routeProfiles adds Go's profiling endpoints under /debug/pprof/. A
// profile shows the process's memory and stacks, and a CPU profile or a
// trace costs the node while it runs, so they need the admin credential
// whatever HTTPAuth allows for the other paths.
func (r *Runtime) routeProfiles(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", r.adminOnly(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/cmdline", r.adminOnly(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("GET /debug/pprof/profile", r.adminOnly(http.HandlerFunc(pprof.Profile)))
	mux.Handle("GET /debug/pprof/symbol", r.adminOnly(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("POST /debug/pprof/symbol", r.adminOnly(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", r.adminOnly(http.HandlerFunc(pprof.Trace)))
}

// adminOnly serves next only to a request with the admin credential: the
// admin secret, or under TLS a certificate naming the admin role.
func (r *Runtime) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		role, ok := r.httpRole(req)
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Basic realm="cairn", charset="UTF-8"`)
			http.Error(w, "the admin credential is required", http.StatusUnauthorized)
		case role != session.RoleAdmin:
			http.Error(w, "the admin role is required", http.StatusForbidden)
		default:
			next.ServeHTTP(w, req)
		}
	})
}

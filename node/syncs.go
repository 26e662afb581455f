package node

import (
	"github.com/cairnmq/cairn/storage"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// SyncRouter turns the environment's token-based durability requests into
// completion callbacks, which is what storage wants. It is owned by one
// node and used from its handlers only.
type SyncRouter struct {
	env     Env
	next    SyncToken
	pending map[SyncToken]func(error)
	gate    *storage.FileGate
	dirs    *storage.DirSyncs
}

// NewSyncRouter returns a router that issues syncs through env.
func NewSyncRouter(env Env) *SyncRouter {
	return &SyncRouter{env: env, pending: make(map[SyncToken]func(error)),
		gate: storage.NewFileGate(storage.DefaultFileGate), dirs: storage.NewDirSyncs()}
}

// FileGate implements storage.GatedHost: the node's state files take
// turns beyond storage.DefaultFileGate writes at once.
func (r *SyncRouter) FileGate() *storage.FileGate { return r.gate }

// DirSyncs implements storage.SharedDirHost: syncs of one directory asked
// for at about the same time (the queues directory, as many queues are
// created at once) share one.
func (r *SyncRouter) DirSyncs() *storage.DirSyncs { return r.dirs }

// Sync requests durability for f and calls done with the outcome.
func (r *SyncRouter) Sync(f vfs.File, done func(error)) {
	if done == nil {
		panic("node: SyncRouter.Sync without a completion callback")
	}
	r.next++
	r.pending[r.next] = done
	r.env.Sync(f, r.next)
}

// Boundary forwards a transition boundary to the environment.
func (r *SyncRouter) Boundary(name string) { r.env.Boundary(name) }

// Complete routes an OnSynced call. It reports false for a token it never
// issued, which the caller should treat as an environment bug.
func (r *SyncRouter) Complete(tok SyncToken, err error) bool {
	done, ok := r.pending[tok]
	if !ok {
		return false
	}
	delete(r.pending, tok)
	done(err)
	return true
}

// Pending reports the number of syncs still in flight.
func (r *SyncRouter) Pending() int { return len(r.pending) }

// ungated is the router without its FileGate: the metadata's state files
// (snapshot, hard state) do not wait behind thousands of queues' epoch
// writes in a mass failover, since the metadata's progress is what those
// failovers wait on.
type ungated struct{ r *SyncRouter }

func (u ungated) Sync(f vfs.File, done func(error)) { u.r.Sync(f, done) }
func (u ungated) Boundary(name string)              { u.r.Boundary(name) }
func (u ungated) DirSyncs() *storage.DirSyncs       { return u.r.dirs }

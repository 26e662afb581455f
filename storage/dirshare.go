package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DirSyncs shares the syncs of one directory among the callers that ask
// for it at about the same time: a group commit for directory entries. A
// sync asked for while another of the same directory is in flight waits
// for that one to finish and then rides the next, together with every
// other request that came in meanwhile. It never rides the sync already
// in flight, which may have started before the caller's change.
//
// Many queues created at once each add an entry to the node's queues
// directory and each ask for it to be synced; sixteen creators kept
// sixteen syncs of it going where two do the same work.
type DirSyncs struct {
	dirs map[string]*dirSyncState
}

// dirSyncState is one directory's sync in flight: the requests it
// answers and those that wait for the next.
type dirSyncState struct {
	dones, waiting []func(error)
}

// NewDirSyncs returns an empty set of shared directory syncs.
func NewDirSyncs() *DirSyncs { return &DirSyncs{dirs: make(map[string]*dirSyncState)} }

// SharedDirHost is a Host whose directory syncs are shared.
type SharedDirHost interface {
	Host
	DirSyncs() *DirSyncs
}

// InFlight reports how many directories have a sync in flight.
func (d *DirSyncs) InFlight() int { return len(d.dirs) }

// sync makes dir's entries durable through host and calls done.
func (d *DirSyncs) sync(fs vfs.FS, host Host, dir string, done func(error)) {
	if s, ok := d.dirs[dir]; ok {
		s.waiting = append(s.waiting, done)
		return
	}
	d.start(fs, host, dir, []func(error){done})
}

// start syncs dir for the callers in dones, and afterwards for those that
// asked while it ran.
func (d *DirSyncs) start(fs vfs.FS, host Host, dir string, dones []func(error)) {
	if len(dones) == 0 {
		panic(fmt.Sprintf("storage: a shared sync of %s for nobody", dir))
	}
	s := &dirSyncState{dones: dones}
	d.dirs[dir] = s
	finish := func(err error) {
		if d.dirs[dir] != s {
			panic(fmt.Sprintf("storage: shared sync of %s finished twice", dir))
		}
		delete(d.dirs, dir)
		// The next sync starts before anyone is told, so what the callers
		// change in their callbacks waits for a sync after it.
		if next := s.waiting; len(next) > 0 {
			d.start(fs, host, dir, next)
		}
		for _, done := range s.dones {
			done(err)
		}
	}
	syncOneDir(fs, host, dir, finish)
}

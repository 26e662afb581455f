package storage

import (
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ensureDir creates dir and any missing ancestors, and returns the
// directories whose entries changed: the parent of every directory it
// created. A created directory is durable only once its parent is synced.
func ensureDir(fs vfs.FS, dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, iofs.ErrNotExist) {
			return nil, fmt.Errorf("storage: stat %s: %w", d, err)
		}
		missing = append(missing, d)
		if parent := fs.PathDir(d); parent == d || parent == "." || parent == "" {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: creating %s: %w", dir, err)
	}
	parents := make([]string, len(missing))
	for i, d := range missing {
		parents[i] = fs.PathDir(d)
	}
	return parents, nil
}

// syncDirs opens each directory and asks the host to sync it, calling
// done once with the first error after all have finished.
func syncDirNames(fs vfs.FS, host Host, dirs []string, done func(error)) {
	if len(dirs) == 0 {
		done(nil)
		return
	}
	outstanding := len(dirs)
	var first error
	finish := func(err error) {
		if err != nil && first == nil {
			first = err
		}
		if outstanding--; outstanding == 0 {
			done(first)
		}
	}
	shared, _ := host.(SharedDirHost)
	for _, name := range dirs {
		if shared != nil {
			shared.DirSyncs().sync(fs, host, name, finish)
			continue
		}
		syncOneDir(fs, host, name, finish)
	}
}

// syncOneDir opens dir, asks host to sync it, and closes it once the sync
// is done.
func syncOneDir(fs vfs.FS, host Host, dir string, done func(error)) {
	d, err := fs.OpenDir(dir)
	if err != nil {
		done(fmt.Errorf("opening directory %q: %w", dir, err))
		return
	}
	host.Sync(d, func(err error) {
		d.Close()
		done(err)
	})
}

// MakeDirs creates dir (and missing ancestors) and makes their entries
// durable, then calls done. When dir already exists it still syncs dir's
// parent, because after a process crash an entry can exist in the page
// cache without being on disk. Files created inside dir later are the
// business of whoever creates them.
func MakeDirs(fs vfs.FS, dir string, host Host, done func(error)) {
	created, err := ensureDir(fs, dir)
	if err != nil {
		done(err)
		return
	}
	if len(created) == 0 {
		created = []string{fs.PathDir(dir)}
	}
	host.Boundary("storage.before.sync-dirs")
	syncDirNames(fs, host, created, func(err error) {
		if err == nil {
			host.Boundary("storage.after.sync-dirs")
		}
		done(err)
	})
}

// SyncDir makes dir's entries durable (a rename or removal inside it, say)
// and calls done.
func SyncDir(fs vfs.FS, dir string, host Host, done func(error)) {
	host.Boundary("storage.before.sync-dirs")
	syncDirNames(fs, host, []string{dir}, func(err error) {
		if err == nil {
			host.Boundary("storage.after.sync-dirs")
		}
		done(err)
	})
}

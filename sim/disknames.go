package sim

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// namingFS is the disk's memory filesystem beneath fault injection. It
// passes every call through, and when a call changes which file a name
// refers to, it keeps the disk's decayed bits with the files they decayed
// in: a bit decays in a file, not in a name. A replica dropped after a
// rot and created again lives in a directory of the same name (the name
// comes from the queue's incarnation), and its new log holds the same
// records at the same offsets; tied to the name, the old decay was laid
// on the new log at the next crash, taking records the new replica had
// synced and no fault had touched.
//
// A crash may undo a name change whose directory was never synced. The
// decayed bit then stays out of the file that comes back: the simulator
// spares a fault the model allowed, and never applies one it did not.
type namingFS struct {
	vfs.FS
	d *Disk
}

// Create makes name refer to a new, empty file.
func (n namingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := n.FS.Create(name, category)
	if err == nil {
		n.d.unlinkRots(name)
	}
	return appending(f, err)
}

// Remove unlinks name.
func (n namingFS) Remove(name string) error {
	err := n.FS.Remove(name)
	if err == nil {
		n.d.unlinkRots(name)
	}
	return err
}

// RemoveAll unlinks name and everything under it.
func (n namingFS) RemoveAll(name string) error {
	err := n.FS.RemoveAll(name)
	if err == nil {
		n.d.unlinkRots(name)
	}
	return err
}

// Rename moves the file or directory oldname to newname, replacing what
// newname referred to.
func (n namingFS) Rename(oldname, newname string) error {
	err := n.FS.Rename(oldname, newname)
	if err == nil {
		n.d.renameRots(oldname, newname)
	}
	return err
}

// ReuseForWrite renames oldname to newname and opens it for writing. The
// memory filesystem renames underneath, out of this wrapper's sight, so
// the decayed bits move here.
func (n namingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := n.FS.ReuseForWrite(oldname, newname, category)
	if err == nil {
		n.d.renameRots(oldname, newname)
	}
	return appending(f, err)
}

// OpenReadWrite opens name for reading and writing, creating it if it is
// missing.
func (n namingFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return appending(n.FS.OpenReadWrite(name, category, opts...))
}

// Link gives the file oldname a second name, newname; its decayed bits
// show under both.
func (n namingFS) Link(oldname, newname string) error {
	err := n.FS.Link(oldname, newname)
	if err == nil {
		for _, rot := range n.d.rots {
			if path, ok := movedPath(rot.Path, oldname, newname); ok {
				rot.Path = path
				n.d.rots = append(n.d.rots, rot)
			}
		}
	}
	return err
}

// unlinkRots forgets the decayed bits of the file or directory tree name
// referred to: whatever the name refers to next is another file.
func (d *Disk) unlinkRots(name string) {
	kept := d.rots[:0]
	for _, rot := range d.rots {
		if !within(rot.Path, name) {
			kept = append(kept, rot)
		}
	}
	d.rots = kept
}

// renameRots moves the decayed bits of oldname's files to their new names,
// after forgetting those of the files newname replaced.
func (d *Disk) renameRots(oldname, newname string) {
	if oldname == newname {
		return
	}
	d.unlinkRots(newname)
	for i, rot := range d.rots {
		if path, ok := movedPath(rot.Path, oldname, newname); ok {
			d.rots[i].Path = path
		}
	}
}

// within reports whether path is name or lies under the directory name.
func within(path, name string) bool {
	return path == name || strings.HasPrefix(path, name+"/")
}

// movedPath is path after the file or directory oldname became newname,
// and whether the move concerns it at all.
func movedPath(path, oldname, newname string) (string, bool) {
	if !within(path, oldname) {
		return path, false
	}
	return newname + path[len(oldname):], true
}

package node

import (
	"fmt"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/storage"
	"github.com/cairnmq/cairn/wire"
)

// identityFile is the state file, in the metadata directory, that stamps
// a data directory with the cluster and node it belongs to.
const identityFile = "identity"

// checkIdentity stamps a data directory the first time a node starts on
// it, and afterwards refuses to start on one stamped for another node or
// another cluster: a copied or misplaced data directory would make this
// node claim entries and replicas it never held, and the real owner of
// the directory would later find the cluster contradicting it.
func (n *Node) checkIdentity(done func()) {
	fs := n.env.FS()
	st, data, err := storage.OpenStateFile(fs, n.metaDir(), identityFile, n.syncs)
	if err != nil {
		n.env.Halt(fmt.Sprintf("opening the data directory's identity: %v", err))
		return
	}
	if data != nil {
		d := wire.NewDecoder(data)
		cluster, id := d.String(), NodeID(d.Uint64())
		if err := d.Finish(); err != nil {
			n.env.Halt(fmt.Sprintf("the data directory's identity is unreadable: %v", err))
			return
		}
		if id != n.cfg.ID || cluster != n.cfg.Cluster {
			n.env.Halt(fmt.Sprintf("the data directory %q belongs to node %d of cluster %q, but this is node %d of cluster %q: refusing to start on it",
				n.path(), id, cluster, n.cfg.ID, n.cfg.Cluster))
			return
		}
		done()
		return
	}
	b := wire.AppendString(nil, n.cfg.Cluster)
	b = wire.AppendUint64(b, uint64(n.cfg.ID))
	st.Write(b, func(err error) {
		if err != nil {
			n.env.Halt(fmt.Sprintf("stamping the data directory: %v", err))
			return
		}
		n.emit(event.NewNodeStamped(n.cfg.Cluster))
		done()
	})
}

package live

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/session"
)

// Member is one node of the cluster as the others see it.
type Member struct {
	ID node.NodeID
	// PeerAddr is where the other nodes dial this one (host:port).
	PeerAddr string
	// ClientAddr is the address clients are told to dial. Empty means the
	// node does not advertise one; clients then cannot be redirected to it.
	ClientAddr string
	// HTTPAddr is the node's status and metrics address, for tools.
	HTTPAddr string
}

// Config configures one production node.
type Config struct {
	// Node is the node's own configuration. ID is the node's ID; Nodes
	// and DataDir are filled in by New from Members and DataDir.
	Node node.Config
	// Members lists every node of the cluster, this one included.
	Members []Member
	// DataDir is the directory holding everything the node persists.
	DataDir string
	// ClientListen, PeerListen and HTTPListen are the addresses to listen
	// on. Port 0 picks a free port (see Runtime's address methods).
	// HTTPListen may be empty to serve no HTTP.
	ClientListen string
	PeerListen   string
	HTTPListen   string
	// TLS, when set, requires mutual TLS on the client and peer ports
	// and serves the HTTP port over TLS; it must carry this node's
	// certificate, and a CA pool in both RootCAs and ClientCAs (LoadTLS
	// builds one). Certificates name their holder's role (see
	// NodeCertURI and RoleCertURI).
	TLS *tls.Config
	// PeerSecret, ClientSecret and AdminSecret are what each role must
	// prove when TLS is off. Only nodes hold the peer secret, so a client
	// can never join the peer port; only admins hold the admin secret,
	// which alone allows the operations that change the cluster. They
	// must differ. Without TLS, ClientSecret is required, and PeerSecret
	// too when the cluster has more than one member; without
	// AdminSecret, no admin can connect.
	PeerSecret   []byte
	ClientSecret []byte
	AdminSecret  []byte
	// Secret is the former single cluster secret, kept so older callers
	// still build: it is used as ClientSecret when that is empty, and it
	// never admits a peer or an admin.
	Secret []byte

	// HTTPAuth says which credential the HTTP port requires for anything
	// but HTTPOpenPaths. Default HTTPAuthClient.
	HTTPAuth HTTPAuth
	// HTTPOpenPaths are served without a credential. Default /healthz
	// and /metrics; set it to a non-nil empty slice to open nothing.
	HTTPOpenPaths []string
	// Limits bound what connections may cost the node.
	Limits Limits

	// Logger receives the node's logs. Default: slog.Default().
	Logger *slog.Logger
	// SendQueue bounds each connection's queue of outgoing frames; a
	// frame that does not fit is dropped and counted. Default 4096.
	SendQueue int
	// SyncWorkers is how many fsyncs may run at once. Default 4.
	SyncWorkers int
	// DrainTimeout bounds how long a shutdown waits for in-flight work.
	// Default 5s.
	DrainTimeout time.Duration
	// ShutdownHandoff bounds how long a shutdown first spends handing
	// the queues this node owns to other replicas, serving clients
	// meanwhile, before it drains. Zero means the default, 10s; a
	// negative value turns the handoff off, leaving the queues to fail
	// over once the node is found down.
	ShutdownHandoff time.Duration
	// HandshakeTimeout bounds TLS plus the session handshake. Default 5s.
	HandshakeTimeout time.Duration
	// MaxClients bounds concurrent client connections. Default 4096.
	MaxClients int
	// Exit ends the process; Halt and panics call it with a non-zero
	// status. Default os.Exit. Tests substitute one that returns, after
	// which the runtime stops serving.
	Exit func(code int)
}

func (c *Config) fill() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SendQueue == 0 {
		c.SendQueue = 4096
	}
	if c.SyncWorkers == 0 {
		c.SyncWorkers = 4
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 5 * time.Second
	}
	if c.ShutdownHandoff == 0 {
		c.ShutdownHandoff = 10 * time.Second
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.MaxClients == 0 {
		c.MaxClients = 4096
	}
	if c.HTTPOpenPaths == nil {
		c.HTTPOpenPaths = []string{"/healthz", "/metrics"}
	}
	c.Limits.fill(c.MaxClients, len(c.Members), openFileLimit())
	if c.Exit == nil {
		c.Exit = os.Exit
	}
}

// validate reports the first problem with the configuration, naming the
// field.
func (c *Config) validate() error {
	switch {
	case c.DataDir == "":
		return errors.New("live: DataDir is empty")
	case !filepath.IsAbs(c.DataDir):
		return fmt.Errorf("live: DataDir %q is not an absolute path", c.DataDir)
	case c.ClientListen == "":
		return errors.New("live: ClientListen is empty")
	case c.PeerListen == "":
		return errors.New("live: PeerListen is empty")
	case c.SendQueue < 1 || c.SyncWorkers < 1 || c.MaxClients < 1:
		return errors.New("live: SendQueue, SyncWorkers and MaxClients must be positive")
	case c.HTTPAuth > HTTPAuthNone:
		return fmt.Errorf("live: HTTPAuth %d is not a known setting", c.HTTPAuth)
	}
	if err := c.validateSecrets(); err != nil {
		return err
	}
	if err := c.Limits.validate(openFileLimit()); err != nil {
		return err
	}
	if c.findMember(c.Node.ID) == nil {
		return fmt.Errorf("live: node %s is not among the members", c.Node.ID)
	}
	for i, m := range c.Members {
		if m.ID == 0 {
			return fmt.Errorf("live: Members[%d] has node ID 0", i)
		}
		if slices.ContainsFunc(c.Members[:i], func(o Member) bool { return o.ID == m.ID }) {
			return fmt.Errorf("live: Members lists node %s twice", m.ID)
		}
		if m.ID != c.Node.ID && m.PeerAddr == "" {
			return fmt.Errorf("live: Members[%d] (node %s) has no peer address", i, m.ID)
		}
	}
	return nil
}

// validateSecrets checks that, without TLS, every role that must connect
// has a secret of its own.
func (c *Config) validateSecrets() error {
	if c.TLS != nil {
		return nil
	}
	k := c.keys()
	switch {
	case len(k.Client) == 0:
		return errors.New("live: neither TLS nor a client secret is configured; connections cannot be authenticated")
	case len(k.Peer) == 0 && len(c.Members) > 1:
		return errors.New("live: without TLS a cluster of several nodes needs a PeerSecret, which only nodes hold")
	case bytes.Equal(k.Peer, k.Client), len(k.Admin) > 0 && (bytes.Equal(k.Admin, k.Client) || bytes.Equal(k.Admin, k.Peer)):
		return errors.New("live: the peer, client and admin secrets must all differ, or one role could pass for another")
	}
	return nil
}

// keys are the secrets the session handshake checks: none under TLS,
// where certificates name the roles.
func (c *Config) keys() session.Keys {
	if c.TLS != nil {
		return session.Keys{}
	}
	client := c.ClientSecret
	if len(client) == 0 {
		client = c.Secret
	}
	return session.Keys{Peer: c.PeerSecret, Client: client, Admin: c.AdminSecret}
}

func (c *Config) findMember(id node.NodeID) *Member {
	for i := range c.Members {
		if c.Members[i].ID == id {
			return &c.Members[i]
		}
	}
	return nil
}

// nodeConfig is the node's configuration with the cluster and the data
// directory filled in.
func (c *Config) nodeConfig() node.Config {
	nc := c.Node
	nc.Nodes = nil
	for _, m := range c.Members {
		nc.Nodes = append(nc.Nodes, m.ID)
	}
	slices.Sort(nc.Nodes)
	nc.DataDir = c.DataDir
	return nc
}

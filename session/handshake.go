package session

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/cairnmq/cairn/wire"
)

// Role says what the initiator of a connection is, and so what it may
// do once connected.
type Role uint8

// Roles. Zero is never valid, so a zeroed hello cannot pass for one.
const (
	RolePeer   Role = 1 // another node of the cluster
	RoleClient Role = 2 // an application or the CLI: publish, consume, create queues
	RoleAdmin  Role = 3 // a client that may also change the cluster (delete queues, detection policy)
)

// String names the role for logs.
func (r Role) String() string {
	switch r {
	case RolePeer:
		return "peer"
	case RoleClient:
		return "client"
	case RoleAdmin:
		return "admin"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// IsClient reports whether r connects to the client port: a client or an
// admin.
func (r Role) IsClient() bool { return r == RoleClient || r == RoleAdmin }

// Keys are the secrets a node accepts when TLS is off, one per role. Each
// role proves its own secret, so a client that holds the client secret
// learns nothing that lets it pass for a peer or an admin. A role whose
// key is empty cannot connect at all.
type Keys struct {
	Peer   []byte
	Client []byte
	Admin  []byte
}

// For returns the secret of role r, or nil.
func (k Keys) For(r Role) []byte {
	switch r {
	case RolePeer:
		return k.Peer
	case RoleClient:
		return k.Client
	case RoleAdmin:
		return k.Admin
	}
	return nil
}

// Empty reports whether no key is set: the connection is then
// authenticated by TLS, and the handshake proves nothing.
func (k Keys) Empty() bool { return len(k.Peer) == 0 && len(k.Client) == 0 && len(k.Admin) == 0 }

// NodeInfo is how a client reaches one node: the client address it should
// dial, and the node's HTTP address for status pages (empty if none).
type NodeInfo struct {
	ID         uint32
	ClientAddr string
	HTTPAddr   string
}

// Errors a handshake can end with, besides malformed input and I/O
// errors.
var (
	// ErrBadProof means the two sides hold different secrets for the
	// initiator's role. Either side may hold the wrong one, so neither
	// side's message blames the other.
	ErrBadProof = errors.New("session: secret mismatch")
	// ErrUnexpected means a well-formed frame arrived out of turn.
	ErrUnexpected = errors.New("session: unexpected message during the handshake")
)

// RefusedError reports that the responder turned the initiator away, and
// the reason it gave.
type RefusedError struct{ Reason string }

// Error implements error.
func (e *RefusedError) Error() string { return "session: refused by the node: " + e.Reason }

// Labels keep the two proofs distinct: a responder's proof can never be
// replayed as an initiator's, even over the same nonces.
const (
	labelResponder = "cairn/handshake/v1 responder"
	labelInitiator = "cairn/handshake/v1 initiator"
)

// exchange is everything both proofs cover: who speaks to whom in what
// role, and both fresh nonces.
type exchange struct {
	role       Role
	initiator  uint32
	responder  uint32
	initNonce  []byte
	replyNonce []byte
}

// mac returns the HMAC-SHA256 of the exchange under secret, or nil when
// there is no secret (TLS authenticates the connection instead).
func (x exchange) mac(secret []byte, label string) []byte {
	if len(secret) == 0 {
		return nil
	}
	b := wire.AppendString(nil, label)
	b = wire.AppendUint8(b, uint8(x.role))
	b = wire.AppendUint32(b, x.initiator)
	b = wire.AppendUint32(b, x.responder)
	b = wire.AppendBytes(b, x.initNonce)
	b = wire.AppendBytes(b, x.replyNonce)
	h := hmac.New(sha256.New, secret)
	h.Write(b)
	return h.Sum(nil)
}

// verify reports whether got is the expected proof, in constant time.
// Without a secret there is nothing to prove.
func (x exchange) verify(secret []byte, label string, got []byte) bool {
	if len(secret) == 0 {
		return true
	}
	return hmac.Equal(got, x.mac(secret, label))
}

func newNonce() []byte {
	b := make([]byte, nonceSize)
	rand.Read(b) // never fails: the runtime aborts if the OS has no randomness
	return b
}

// send writes one handshake frame.
func send(w io.Writer, m wire.Message) error {
	_, err := w.Write(wire.Encode(nil, m))
	return err
}

// receive reads one handshake frame of at most limit body bytes and
// returns its kind and body. A refusal is turned into a RefusedError
// here, so callers only see the kinds they asked for.
func receive(r *bufio.Reader, limit int) (wire.Kind, []byte, error) {
	frame, err := ReadFrame(r, limit)
	if err != nil {
		return 0, nil, err
	}
	kind, body, err := openFrame(frame)
	if err != nil {
		return 0, nil, err
	}
	if kind == kindRefusal {
		m, err := decodeRefusal(body)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, &RefusedError{Reason: m.reason}
	}
	return kind, body, nil
}

// expect is receive for exactly one kind.
func expect(r *bufio.Reader, want wire.Kind, limit int) ([]byte, error) {
	kind, body, err := receive(r, limit)
	if err != nil {
		return nil, err
	}
	if kind != want {
		return nil, fmt.Errorf("%w: kind %d, want %d", ErrUnexpected, uint16(kind), uint16(want))
	}
	return body, nil
}

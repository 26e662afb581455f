package session

import (
	"bufio"
	"fmt"
	"io"
)

// Initiator is the side that opened the connection: a node dialing a
// peer, or a client dialing a node.
type Initiator struct {
	Role Role
	// Self is the initiator's node ID; zero for clients.
	Self uint32
	// Expect is the node the initiator meant to reach; the handshake fails
	// if another answers. Zero accepts any node.
	Expect uint32
	// Secret is the secret of Role (the peer, client or admin secret), or
	// empty when TLS authenticates.
	Secret []byte
}

// Welcome is what an initiator learns from a successful handshake.
type Welcome struct {
	// Node is the responder's node ID.
	Node uint32
	// Nodes lists every node of the cluster (for clients; empty for
	// peers).
	Nodes []NodeInfo
}

// Handshake runs the initiator's side over r and w. The caller bounds it
// with a deadline on the connection. On success the connection carries
// wire frames from then on, read through the same r.
func (in Initiator) Handshake(r *bufio.Reader, w io.Writer) (Welcome, error) {
	x := exchange{role: in.Role, initiator: in.Self, initNonce: newNonce()}
	if err := send(w, &hello{role: in.Role, node: in.Self, nonce: x.initNonce}); err != nil {
		return Welcome{}, err
	}
	body, err := expect(r, kindChallenge, MaxHandshakeBody)
	if err != nil {
		return Welcome{}, err
	}
	ch, err := decodeChallenge(body)
	if err != nil {
		return Welcome{}, err
	}
	if in.Expect != 0 && ch.node != in.Expect {
		return Welcome{}, fmt.Errorf("session: reached node %d, expected node %d", ch.node, in.Expect)
	}
	x.responder, x.replyNonce = ch.node, ch.nonce
	if !x.verify(in.Secret, labelResponder, ch.mac) {
		return Welcome{}, fmt.Errorf("%w: node %d holds a different %s secret than this side", ErrBadProof, ch.node, in.Role)
	}
	if err := send(w, &proof{mac: x.mac(in.Secret, labelInitiator)}); err != nil {
		return Welcome{}, err
	}
	body, err = expect(r, kindWelcome, MaxHandshakeBody)
	if err != nil {
		return Welcome{}, err
	}
	wel, err := decodeWelcome(body)
	if err != nil {
		return Welcome{}, err
	}
	if wel.node != ch.node {
		return Welcome{}, fmt.Errorf("session: welcome from node %d after a challenge from node %d", wel.node, ch.node)
	}
	return Welcome{Node: wel.node, Nodes: wel.nodes}, nil
}

// Responder is the side that accepted the connection: always a node.
type Responder struct {
	// Self is this node's ID.
	Self uint32
	// Keys are the secrets each role must prove, or all empty when TLS
	// authenticates.
	Keys Keys
	// Admit decides whether an initiator of this role and node ID may
	// connect; its error is sent to the initiator as the reason.
	Admit func(role Role, node uint32) error
	// Nodes is the cluster as clients should see it.
	Nodes []NodeInfo
}

// Hello is what a responder learns about the initiator.
type Hello struct {
	Role Role
	Node uint32
}

// Handshake runs the responder's side over r and w. It fails, having told
// the initiator why when that is safe, unless the initiator is admitted
// and proves the secret of the role it claims. It reads at most
// MaxInitiatorBody bytes per frame, so a stranger costs little memory.
func (re Responder) Handshake(r *bufio.Reader, w io.Writer) (Hello, error) {
	body, err := expect(r, kindHello, MaxInitiatorBody)
	if err != nil {
		return Hello{}, err
	}
	h, err := decodeHello(body)
	if err != nil {
		return Hello{}, err
	}
	if err := re.admit(h); err != nil {
		send(w, &refusal{reason: err.Error()})
		return Hello{}, err
	}
	secret := re.Keys.For(h.role)
	x := exchange{role: h.role, initiator: h.node, responder: re.Self, initNonce: h.nonce, replyNonce: newNonce()}
	if err := send(w, &challenge{node: re.Self, nonce: x.replyNonce, mac: x.mac(secret, labelResponder)}); err != nil {
		return Hello{}, err
	}
	body, err = expect(r, kindProof, MaxInitiatorBody)
	if err != nil {
		return Hello{}, err
	}
	p, err := decodeProof(body)
	if err != nil {
		return Hello{}, err
	}
	if !x.verify(secret, labelInitiator, p.mac) {
		send(w, &refusal{reason: fmt.Sprintf("secret mismatch: this node holds a different %s secret than the one proven", h.role)})
		return Hello{}, fmt.Errorf("%w: the initiator proved a different %s secret than this node holds", ErrBadProof, h.role)
	}
	wel := &welcome{node: re.Self}
	if h.role.IsClient() {
		wel.nodes = re.Nodes
	}
	if err := send(w, wel); err != nil {
		return Hello{}, err
	}
	return Hello{Role: h.role, Node: h.node}, nil
}

// admit checks the role, then asks the caller's policy.
func (re Responder) admit(h *hello) error {
	switch h.role {
	case RoleClient, RoleAdmin:
		if h.node != 0 {
			return fmt.Errorf("a client must not claim node ID %d", h.node)
		}
	case RolePeer:
		if h.node == 0 {
			return fmt.Errorf("a peer must name its node ID")
		}
	default:
		return fmt.Errorf("unknown role %d", uint8(h.role))
	}
	if !re.Keys.Empty() && len(re.Keys.For(h.role)) == 0 {
		return fmt.Errorf("this node has no %s secret configured, so no %s can connect", h.role, h.role)
	}
	if re.Admit == nil {
		return nil
	}
	return re.Admit(h.role, h.node)
}

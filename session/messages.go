package session

import (
	"fmt"

	"github.com/cairnmq/cairn/wire"
)

// Handshake message kinds. They live far above the node's own kinds so
// the two ranges never meet, and they are only ever valid before the
// handshake completes: after it, wire.Decode refuses them as unknown.
const (
	kindHello     wire.Kind = 0xFE01
	kindChallenge wire.Kind = 0xFE02
	kindProof     wire.Kind = 0xFE03
	kindWelcome   wire.Kind = 0xFE04
	kindRefusal   wire.Kind = 0xFE05
)

// MaxHandshakeBody bounds a handshake frame's body. The largest, a
// welcome listing every node's addresses, is far smaller; an
// unauthenticated sender gets no more memory than this.
const MaxHandshakeBody = 64 << 10

// MaxInitiatorBody bounds the frames a responder reads before the
// initiator has proven anything: a hello or a proof, each well under
// 100 bytes. A node that accepts connections from strangers so spends
// at most this much on each one's frames, not MaxHandshakeBody.
const MaxInitiatorBody = 256

// nonceSize is the length of each side's fresh random nonce.
const nonceSize = 32

// macSize is the length of an HMAC-SHA256.
const macSize = 32

// hello opens the handshake: who the initiator is and its nonce.
type hello struct {
	role  Role
	node  uint32
	nonce []byte
}

// Kind implements wire.Message.
func (*hello) Kind() wire.Kind { return kindHello }

// AppendBody implements wire.Message.
func (m *hello) AppendBody(b []byte) []byte {
	b = wire.AppendUint8(b, uint8(m.role))
	b = wire.AppendUint32(b, m.node)
	return wire.AppendBytes(b, m.nonce)
}

func decodeHello(body []byte) (*hello, error) {
	d := wire.NewDecoder(body)
	m := &hello{role: Role(d.Uint8()), node: d.Uint32(), nonce: d.Bytes()}
	if err := d.Finish(); err != nil {
		return nil, err
	}
	if len(m.nonce) != nonceSize {
		return nil, fmt.Errorf("session: hello nonce of %d bytes, want %d", len(m.nonce), nonceSize)
	}
	return m, nil
}

// challenge answers a hello: who the responder is, its nonce, and (with a
// cluster secret) its proof of the secret over both nonces.
type challenge struct {
	node  uint32
	nonce []byte
	mac   []byte
}

// Kind implements wire.Message.
func (*challenge) Kind() wire.Kind { return kindChallenge }

// AppendBody implements wire.Message.
func (m *challenge) AppendBody(b []byte) []byte {
	b = wire.AppendUint32(b, m.node)
	b = wire.AppendBytes(b, m.nonce)
	return wire.AppendBytes(b, m.mac)
}

func decodeChallenge(body []byte) (*challenge, error) {
	d := wire.NewDecoder(body)
	m := &challenge{node: d.Uint32(), nonce: d.Bytes(), mac: d.Bytes()}
	if err := d.Finish(); err != nil {
		return nil, err
	}
	if len(m.nonce) != nonceSize {
		return nil, fmt.Errorf("session: challenge nonce of %d bytes, want %d", len(m.nonce), nonceSize)
	}
	return m, nil
}

// proof is the initiator's proof of the secret (empty under TLS).
type proof struct {
	mac []byte
}

// Kind implements wire.Message.
func (*proof) Kind() wire.Kind { return kindProof }

// AppendBody implements wire.Message.
func (m *proof) AppendBody(b []byte) []byte { return wire.AppendBytes(b, m.mac) }

func decodeProof(body []byte) (*proof, error) {
	d := wire.NewDecoder(body)
	m := &proof{mac: d.Bytes()}
	return m, d.Finish()
}

// welcome admits the initiator and, for clients, lists the cluster.
type welcome struct {
	node  uint32
	nodes []NodeInfo
}

// Kind implements wire.Message.
func (*welcome) Kind() wire.Kind { return kindWelcome }

// AppendBody implements wire.Message.
func (m *welcome) AppendBody(b []byte) []byte {
	b = wire.AppendUint32(b, m.node)
	b = wire.AppendUint32(b, uint32(len(m.nodes)))
	for _, n := range m.nodes {
		b = wire.AppendUint32(b, n.ID)
		b = wire.AppendString(b, n.ClientAddr)
		b = wire.AppendString(b, n.HTTPAddr)
	}
	return b
}

func decodeWelcome(body []byte) (*welcome, error) {
	d := wire.NewDecoder(body)
	m := &welcome{node: d.Uint32()}
	n := d.Count(12)
	for range n {
		m.nodes = append(m.nodes, NodeInfo{ID: d.Uint32(), ClientAddr: d.String(), HTTPAddr: d.String()})
	}
	return m, d.Finish()
}

// refusal tells the initiator why it was turned away, just before the
// responder closes the connection.
type refusal struct {
	reason string
}

// Kind implements wire.Message.
func (*refusal) Kind() wire.Kind { return kindRefusal }

// AppendBody implements wire.Message.
func (m *refusal) AppendBody(b []byte) []byte { return wire.AppendString(b, m.reason) }

func decodeRefusal(body []byte) (*refusal, error) {
	d := wire.NewDecoder(body)
	m := &refusal{reason: d.String()}
	return m, d.Finish()
}

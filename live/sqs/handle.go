package sqs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
)

// A receipt handle names one delivery: the node whose endpoint made it,
// the queue, the backend's lease and the message. It is opaque to the
// client and authenticated with an HMAC under a secret the endpoint
// draws when it starts, so a forged or altered handle, or one made
// before the endpoint restarted (whose leases died with its connections),
// is refused. Handles are not encrypted: they hide nothing a client does
// not already know.

// handleVersion opens every handle, so the format can change.
const handleVersion = 1

// handleMACBytes is how much of the HMAC-SHA256 a handle carries.
const handleMACBytes = 16

// receipt is what a handle names.
type receipt struct {
	Node    uint32
	Queue   string
	Lease   uint64
	Message MessageID
}

// handleSigner mints and checks receipt handles for one endpoint.
type handleSigner struct {
	node   uint32
	secret []byte
	macs   sync.Pool // of hash.Hash, HMAC-SHA256 under secret
}

// mint encodes r and its MAC.
func (s *handleSigner) mint(r receipt) string {
	b := []byte{handleVersion}
	b = binary.BigEndian.AppendUint32(b, r.Node)
	b = binary.BigEndian.AppendUint64(b, r.Lease)
	b = binary.BigEndian.AppendUint64(b, r.Message.Producer)
	b = binary.BigEndian.AppendUint64(b, r.Message.Seq)
	b = append(b, r.Queue...)
	b = append(b, s.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// handleFixedBytes is the length of a handle's fixed fields.
const handleFixedBytes = 1 + 4 + 8 + 8 + 8

// open checks a handle presented for queue and returns what it names.
// A handle another node's endpoint made is refused with the node's name,
// so a load balancer that does not keep a client on one node is caught
// with a clear message rather than a bare "invalid".
func (s *handleSigner) open(handle, queue string) (receipt, *apiError) {
	// A handle is one exact string, not every string that decodes to its
	// bytes: Strict requires the last character's unused bits to be zero,
	// and urlBase64 refuses the line breaks every base64 decoder skips.
	b, err := base64.RawURLEncoding.Strict().DecodeString(handle)
	if err != nil || !urlBase64(handle) || len(b) < handleFixedBytes+handleMACBytes || b[0] != handleVersion {
		return receipt{}, errReceiptHandle("The input receipt handle %q is not a valid receipt handle.", handle)
	}
	body, mac := b[:len(b)-handleMACBytes], b[len(b)-handleMACBytes:]
	r := receipt{
		Node:  binary.BigEndian.Uint32(body[1:5]),
		Lease: binary.BigEndian.Uint64(body[5:13]),
		Message: MessageID{
			Producer: binary.BigEndian.Uint64(body[13:21]),
			Seq:      binary.BigEndian.Uint64(body[21:29]),
		},
		Queue: string(body[handleFixedBytes:]),
	}
	switch {
	case r.Node != s.node:
		return receipt{}, errReceiptHandle("The receipt handle was issued by the SQS endpoint of node n%d, and this is n%d: "+
			"a delivery's lease lives on the endpoint that received it, so send DeleteMessage to that node "+
			"(a load balancer in front of several nodes must keep each client on one)", r.Node, s.node)
	case !hmac.Equal(mac, s.mac(body)):
		return receipt{}, errReceiptHandle("The input receipt handle is invalid: it was altered, or issued before this endpoint restarted.")
	case r.Queue != queue:
		return receipt{}, errReceiptHandle("The input receipt handle belongs to queue %q, not %q.", r.Queue, queue)
	}
	return r, nil
}

// mac is the MAC a handle carries for body. The keyed hashes are kept
// for reuse: making one hashes the secret twice, as much work again as
// hashing a handle.
func (s *handleSigner) mac(body []byte) []byte {
	m, _ := s.macs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, s.secret)
	}
	m.Reset()
	m.Write(body)
	sum := m.Sum(make([]byte, 0, sha256.Size))[:handleMACBytes]
	s.macs.Put(m)
	return sum
}

// urlBase64 reports whether every byte of s is in base64's URL alphabet.
func urlBase64(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

package sqs

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"slices"
	"sync"
)

// A receipt handle names one delivery twice: by the lease of the endpoint
// that handed it out (its node, the process's start and the backend's
// lease number), which only that endpoint can look up, and by the
// message and the queue owner's lease, which any endpoint can take to
// the owner. So a handle works at every node's endpoint, behind a load
// balancer and across a failover or an endpoint's restart. It is opaque
// to the client and authenticated with an HMAC under a secret every
// endpoint of the cluster derives alike (see handleSecret), so a forged or
// altered handle is refused. Handles are not encrypted: they hide nothing
// a client does not already know.

// handleVersion opens every handle, so the format can change. Version 1
// handles, which only their own endpoint took, are refused.
const handleVersion = 2

// handleMACBytes is how much of the HMAC-SHA256 a handle carries.
const handleMACBytes = 16

// receipt is what a handle names.
type receipt struct {
	Node    uint32
	Start   uint32 // drawn when the endpoint started
	Lease   uint64 // the backend's
	Grant   uint64 // the queue owner's
	Queue   string
	Message MessageID
}

// handleSigner mints and checks receipt handles for one endpoint.
type handleSigner struct {
	node   uint32
	start  uint32
	secret []byte
	macs   sync.Pool // of hash.Hash, HMAC-SHA256 under secret
}

// handleSecret derives the key of receipt handles from the access keys:
// the endpoints of a cluster behind one load balancer accept the same
// keys, so they derive the same secret without one more setting to keep
// alike, and no one who lacks any of the secrets can forge a handle.
// Changing the keys on every node makes the handles out at that moment
// invalid, and their messages are delivered again once their visibility
// timeouts run out.
func handleSecret(keys []AccessKey) []byte {
	sorted := slices.SortedFunc(slices.Values(keys), func(a, b AccessKey) int { return cmp.Compare(a.ID, b.ID) })
	m := hmac.New(sha256.New, []byte("cairn SQS receipt handles"))
	for _, k := range sorted {
		var b []byte
		b = binary.BigEndian.AppendUint32(b, uint32(len(k.ID)))
		b = append(b, k.ID...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(k.Secret)))
		b = append(b, k.Secret...)
		m.Write(b)
	}
	return m.Sum(nil)
}

// mint encodes r and its MAC.
func (s *handleSigner) mint(r receipt) string {
	b := []byte{handleVersion}
	b = binary.BigEndian.AppendUint32(b, r.Node)
	b = binary.BigEndian.AppendUint32(b, r.Start)
	b = binary.BigEndian.AppendUint64(b, r.Lease)
	b = binary.BigEndian.AppendUint64(b, r.Grant)
	b = binary.BigEndian.AppendUint64(b, r.Message.Producer)
	b = binary.BigEndian.AppendUint64(b, r.Message.Seq)
	b = append(b, r.Queue...)
	b = append(b, s.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// handleFixedBytes is the length of a handle's fixed fields.
const handleFixedBytes = 1 + 4 + 4 + 8 + 8 + 8 + 8

// open checks a handle presented for queue and returns what it names for
// the backend: Local when this endpoint's process made it.
func (s *handleSigner) open(handle, queue string) (Receipt, *apiError) {
	// A handle is one exact string, not every string that decodes to its
	// bytes: Strict requires the last character's unused bits to be zero,
	// and urlBase64 refuses the line breaks every base64 decoder skips.
	b, err := base64.RawURLEncoding.Strict().DecodeString(handle)
	if err != nil || !urlBase64(handle) || len(b) < handleFixedBytes+handleMACBytes || b[0] != handleVersion {
		return Receipt{}, errReceiptHandle("The input receipt handle %q is not a valid receipt handle.", handle)
	}
	body, mac := b[:len(b)-handleMACBytes], b[len(b)-handleMACBytes:]
	r := receipt{
		Node:  binary.BigEndian.Uint32(body[1:5]),
		Start: binary.BigEndian.Uint32(body[5:9]),
		Lease: binary.BigEndian.Uint64(body[9:17]),
		Grant: binary.BigEndian.Uint64(body[17:25]),
		Message: MessageID{
			Producer: binary.BigEndian.Uint64(body[25:33]),
			Seq:      binary.BigEndian.Uint64(body[33:41]),
		},
		Queue: string(body[handleFixedBytes:]),
	}
	switch {
	case !hmac.Equal(mac, s.mac(body)):
		return Receipt{}, errReceiptHandle("The input receipt handle is invalid: it was altered, or made by an endpoint " +
			"with other access keys (every node's endpoint must accept the same keys to take each other's handles).")
	case r.Queue != queue:
		return Receipt{}, errReceiptHandle("The input receipt handle belongs to queue %q, not %q.", r.Queue, queue)
	}
	return Receipt{Lease: r.Lease, Local: r.Node == s.node && r.Start == s.start, ID: r.Message, Grant: r.Grant}, nil
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

package session

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/wire"
)

var roleKeys = Keys{Peer: []byte("peer-secret"), Client: []byte("client-secret"), Admin: []byte("admin-secret")}

// TestEachRoleProvesItsOwnSecret checks that a secret admits only its own
// role: above all, a client that holds the client secret cannot complete
// the handshake as a peer, nor as an admin.
func TestEachRoleProvesItsOwnSecret(t *testing.T) {
	cases := []struct {
		name   string
		in     Initiator
		wantOK bool
	}{
		{"peer with the peer secret", Initiator{Role: RolePeer, Self: 2, Secret: roleKeys.Peer}, true},
		{"client with the client secret", Initiator{Role: RoleClient, Secret: roleKeys.Client}, true},
		{"admin with the admin secret", Initiator{Role: RoleAdmin, Secret: roleKeys.Admin}, true},
		{"peer with the client secret", Initiator{Role: RolePeer, Self: 2, Secret: roleKeys.Client}, false},
		{"admin with the client secret", Initiator{Role: RoleAdmin, Secret: roleKeys.Client}, false},
		{"client with the peer secret", Initiator{Role: RoleClient, Secret: roleKeys.Peer}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, werr, h, herr := run(t, c.in, Responder{Self: 1, Keys: roleKeys})
			if c.wantOK {
				if werr != nil || herr != nil || h.Role != c.in.Role {
					t.Fatalf("initiator: %v, responder: %v, hello %+v", werr, herr, h)
				}
				return
			}
			if !errors.Is(werr, ErrBadProof) || herr == nil {
				t.Fatalf("initiator: %v (want ErrBadProof), responder: %v (want an error)", werr, herr)
			}
		})
	}
}

// TestRoleWithoutKeyIsRefused checks that a node with no admin secret
// turns admins away by name instead of letting an empty secret pass.
func TestRoleWithoutKeyIsRefused(t *testing.T) {
	keys := Keys{Peer: roleKeys.Peer, Client: roleKeys.Client}
	_, werr, _, herr := run(t, Initiator{Role: RoleAdmin}, Responder{Self: 1, Keys: keys})
	var refused *RefusedError
	if !errors.As(werr, &refused) || !strings.Contains(refused.Reason, "no admin secret") || herr == nil {
		t.Fatalf("initiator: %v, responder: %v", werr, herr)
	}
}

// TestSecretMismatchSaysSoOnBothSides checks the wording: neither side
// can tell which secret is the wrong one, so both say "secret mismatch".
func TestSecretMismatchSaysSoOnBothSides(t *testing.T) {
	_, werr, _, _ := run(t, Initiator{Role: RoleClient, Secret: []byte("one")}, Responder{Self: 1, Keys: Keys{Client: []byte("two")}})
	if werr == nil || !strings.Contains(werr.Error(), "secret mismatch") {
		t.Errorf("initiator: %v, want it to say secret mismatch", werr)
	}
	// The responder meets the mismatch itself when the initiator proves
	// something without having checked the responder first.
	_, werr, _, herr := run(t, Initiator{Role: RoleClient}, Responder{Self: 1, Keys: Keys{Client: []byte("two")}})
	var refused *RefusedError
	if !errors.As(werr, &refused) || !strings.Contains(refused.Reason, "secret mismatch") {
		t.Errorf("initiator: %v, want a refusal saying secret mismatch", werr)
	}
	if herr == nil || !strings.Contains(herr.Error(), "secret mismatch") || !errors.Is(herr, ErrBadProof) {
		t.Errorf("responder: %v, want ErrBadProof saying secret mismatch", herr)
	}
}

// TestResponderReadsOnlySmallFrames checks that a stranger cannot make a
// node read (or allocate) a large frame before proving anything.
func TestResponderReadsOnlySmallFrames(t *testing.T) {
	in := header(kindHello, MaxInitiatorBody+1)
	_, err := Responder{Self: 1, Keys: roleKeys}.Handshake(bufio.NewReader(bytes.NewReader(in)), &bytes.Buffer{})
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("a hello announcing %d bytes: %v, want ErrFrameTooLarge", MaxInitiatorBody+1, err)
	}
}

// header builds a frame header announcing a body of n bytes.
func header(kind wire.Kind, n uint32) []byte {
	h := make([]byte, wire.HeaderSize)
	h[0] = wire.Version
	h[1], h[2] = byte(kind), byte(kind>>8)
	h[3], h[4], h[5], h[6] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return h
}

package session

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// Both fuzz targets feed one side of the handshake whatever bytes the
// other side might send. Neither may panic, allocate beyond its frame
// limit, or accept a connection the bytes did not earn: with a secret,
// random bytes can never carry a valid proof. Their seeds live in
// testdata/fuzz, one valid or nearly valid transcript per file.

// FuzzHandshakeServer plays a hostile initiator against a node.
func FuzzHandshakeServer(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, keys := range []Keys{roleKeys, {}} {
			re := Responder{Self: 1, Keys: keys, Nodes: cluster}
			h, err := re.Handshake(bufio.NewReader(bytes.NewReader(in)), io.Discard)
			if err == nil && !keys.Empty() {
				t.Fatalf("random bytes passed the handshake as %+v", h)
			}
		}
	})
}

// FuzzHandshakeClient plays a hostile node against a client. Without a
// secret (as under TLS) the client reads on to the welcome, so the
// welcome decoder is reached too.
func FuzzHandshakeClient(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, secret := range [][]byte{nil, roleKeys.Client} {
			ini := Initiator{Role: RoleClient, Secret: secret}
			w, err := ini.Handshake(bufio.NewReader(bytes.NewReader(in)), io.Discard)
			if err == nil && secret != nil {
				t.Fatalf("random bytes passed the handshake as %+v", w)
			}
		}
	})
}

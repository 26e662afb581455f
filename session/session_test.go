package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
	"github.com/google/go-cmp/cmp"
)

var cluster = []NodeInfo{{ID: 1, ClientAddr: "a:1", HTTPAddr: "a:2"}, {ID: 2, ClientAddr: "b:1"}}

// run performs both sides of a handshake over an in-memory connection.
func run(t *testing.T, in Initiator, re Responder) (Welcome, error, Hello, error) {
	t.Helper()
	a, b := net.Pipe()
	deadline := time.Now().Add(5 * time.Second)
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	type result struct {
		h   Hello
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := re.Handshake(bufio.NewReader(b), b)
		b.Close() // like the node: a failed handshake closes the connection
		done <- result{h, err}
	}()
	w, werr := in.Handshake(bufio.NewReader(a), a)
	a.Close()
	r := <-done
	return w, werr, r.h, r.err
}

func TestHandshakeWithSecret(t *testing.T) {
	secret := []byte("s3cret")
	w, werr, h, herr := run(t,
		Initiator{Role: RoleClient, Secret: secret, Expect: 1},
		Responder{Self: 1, Keys: Keys{Client: secret}, Nodes: cluster})
	if werr != nil || herr != nil {
		t.Fatalf("initiator: %v, responder: %v", werr, herr)
	}
	if w.Node != 1 || !cmp.Equal(w.Nodes, cluster) {
		t.Fatalf("welcome %+v", w)
	}
	if h != (Hello{Role: RoleClient}) {
		t.Fatalf("hello %+v", h)
	}
}

func TestPeersLearnNoNodeList(t *testing.T) {
	w, werr, h, herr := run(t,
		Initiator{Role: RolePeer, Self: 1, Secret: []byte("k")},
		Responder{Self: 2, Keys: Keys{Peer: []byte("k")}, Nodes: cluster})
	if werr != nil || herr != nil {
		t.Fatalf("initiator: %v, responder: %v", werr, herr)
	}
	if len(w.Nodes) != 0 || h.Node != 1 || h.Role != RolePeer {
		t.Fatalf("welcome %+v, hello %+v", w, h)
	}
}

func TestHandshakeUnderTLSNeedsNoSecret(t *testing.T) {
	_, werr, _, herr := run(t, Initiator{Role: RoleClient}, Responder{Self: 3})
	if werr != nil || herr != nil {
		t.Fatalf("initiator: %v, responder: %v", werr, herr)
	}
}

func TestSecretMismatchFails(t *testing.T) {
	cases := []struct {
		name       string
		in, re     []byte
		wantIn     error
		wantRe     error
		refusedToo bool
	}{
		{"wrong secret", []byte("a"), []byte("b"), ErrBadProof, nil, false},
		{"initiator has none", nil, []byte("b"), nil, ErrBadProof, true},
		{"responder has none", []byte("a"), nil, ErrBadProof, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, werr, _, herr := run(t, Initiator{Role: RoleClient, Secret: c.in}, Responder{Self: 1, Keys: Keys{Client: c.re}})
			if werr == nil || herr == nil {
				t.Fatalf("handshake passed: initiator %v, responder %v", werr, herr)
			}
			if c.wantIn != nil && !errors.Is(werr, c.wantIn) {
				t.Errorf("initiator: %v, want %v", werr, c.wantIn)
			}
			if c.wantRe != nil && !errors.Is(herr, c.wantRe) {
				t.Errorf("responder: %v, want %v", herr, c.wantRe)
			}
			var refused *RefusedError
			if c.refusedToo && !errors.As(werr, &refused) {
				t.Errorf("initiator: %v, want a refusal", werr)
			}
		})
	}
}

func TestAdmissionRefusalNamesTheReason(t *testing.T) {
	admit := func(role Role, node uint32) error { return fmt.Errorf("node %d is not welcome", node) }
	_, werr, _, herr := run(t, Initiator{Role: RolePeer, Self: 9, Secret: []byte("k")}, Responder{Self: 1, Keys: Keys{Peer: []byte("k")}, Admit: admit})
	var refused *RefusedError
	if !errors.As(werr, &refused) || refused.Reason != "node 9 is not welcome" || herr == nil {
		t.Fatalf("initiator: %v, responder: %v", werr, herr)
	}
}

func TestWrongNodeAnswering(t *testing.T) {
	_, werr, _, _ := run(t, Initiator{Role: RolePeer, Self: 1, Expect: 2, Secret: []byte("k")}, Responder{Self: 3, Keys: Keys{Peer: []byte("k")}})
	if werr == nil {
		t.Fatal("reaching node 3 when node 2 was expected passed")
	}
}

func TestReadFrameBounds(t *testing.T) {
	good := wire.Encode(nil, &wire.Reply{ReqID: 7, Detail: "hi"})
	huge := append([]byte(nil), good[:wire.HeaderSize]...)
	huge[3], huge[4], huge[5], huge[6] = 0xff, 0xff, 0x00, 0x00 // 65535 bytes announced
	cases := []struct {
		name  string
		input []byte
		limit int
		want  error
	}{
		{"clean end", nil, 1 << 20, io.EOF},
		{"end inside the header", good[:5], 1 << 20, ErrTruncated},
		{"end inside the body", good[:len(good)-1], 1 << 20, ErrTruncated},
		{"over the caller's limit", huge, 1000, ErrFrameTooLarge},
		{"bad version", append([]byte{9}, good[1:]...), 1 << 20, wire.ErrBadVersion},
	}
	for _, c := range cases {
		_, err := ReadFrame(bufio.NewReader(bytes.NewReader(c.input)), c.limit)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	frame, err := ReadFrame(bufio.NewReader(bytes.NewReader(good)), 1<<20)
	if err != nil || !bytes.Equal(frame, good) {
		t.Fatalf("good frame: %v", err)
	}
}

package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rawBody is a frame body of a chosen kind, whatever its bytes say, so a
// fuzz input can be wrapped in a frame whose header and checksum are
// right and reach the body decoder.
type rawBody struct {
	kind Kind
	body []byte
}

func (r rawBody) Kind() Kind                 { return r.kind }
func (r rawBody) AppendBody(b []byte) []byte { return append(b, r.body...) }

// FuzzDecodeBody decodes arbitrary bytes as the body of a message of a
// given kind, inside a frame that is otherwise valid, which is where
// FuzzDecode (whole frames, mostly refused by their checksum) rarely
// gets. The decoder must never panic, and a body it accepts must encode
// back to a frame that decodes to an equal message: the codec loses
// nothing it accepted.
func FuzzDecodeBody(f *testing.F) {
	for _, m := range samples {
		f.Add(uint16(m.Kind()), m.AppendBody(nil))
	}
	f.Fuzz(func(t *testing.T, kind uint16, body []byte) {
		if len(body) > MaxBodySize {
			return
		}
		m, err := Decode(Encode(nil, rawBody{Kind(kind), body}))
		if err != nil {
			return
		}
		if m.Kind() != Kind(kind) {
			t.Fatalf("a %s body decoded as a %s", Kind(kind), m.Kind())
		}
		back, err := Decode(Encode(nil, m))
		if err != nil {
			t.Fatalf("%s body %x decodes as %s, whose encoding does not decode: %v", Kind(kind), body, Describe(m), err)
		}
		if d := cmp.Diff(m, back); d != "" {
			t.Fatalf("%s body %x changed on a round trip (-first +second):\n%s", Kind(kind), body, d)
		}
	})
}

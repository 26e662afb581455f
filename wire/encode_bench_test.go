package wire

import "testing"

// BenchmarkEncode encodes, into a fresh buffer each time as the nodes'
// and the client's senders do, the messages that carry payloads.
func BenchmarkEncode(b *testing.B) {
	payload := make([]byte, 1024)
	entries := make([]Entry, 16)
	for i := range entries {
		entries[i] = Entry{Type: 1, Body: payload[:200]}
	}
	cases := []struct {
		name string
		m    Message
	}{
		{"delivery-1KiB", &Delivery{Queue: "orders", ID: MessageID{Producer: 7, Seq: 9}, Lease: 3, Attempt: 1, Payload: payload}},
		{"publish-1KiB", &Publish{ReqID: 5, Queue: "orders", ID: MessageID{Producer: 7, Seq: 9}, Payload: payload}},
		{"append-16x200B", &Append{Queue: "orders", Epoch: 2, Entries: entries}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Encode(nil, c.m)
			}
		})
	}
}

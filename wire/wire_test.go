package wire

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var samples = []Message{
	&CounterAppend{FirstIndex: 42, Count: 3},
	&CounterAck{LastIndex: 1 << 40, DurableIndex: 7, Probed: true},
	&CounterProbe{LeaderLast: 99},
	&CreateQueue{ReqID: 1, Queue: "orders", Policy: PolicyAll, DedupWindow: 5 * time.Minute, DeadLetter: "orders-dead", MaxDeliveries: 5},
	&DeadLetter{Queue: "orders-dead", Source: "orders", ID: MessageID{Producer: 4, Seq: 5}, Payload: []byte("poison")},
	&DeadLetter{Queue: "orders-dead", Source: "orders", ID: MessageID{Producer: 4, Seq: 6}, Payload: []byte("poison"), SourceIncarnation: 2, SourceIndex: 41, SettledThrough: 37},
	&DeadLetterReply{Source: "orders", ID: MessageID{Producer: 4, Seq: 5}, Status: StatusDiskFull, Detail: "full"},
	&DeleteQueue{ReqID: 2, Queue: "orders"},
	&Publish{ReqID: 3, Queue: "orders", ID: MessageID{Producer: 4, Seq: 5}, Delay: 1500, Payload: []byte("hello")},
	&Subscribe{ReqID: 6, Queue: "orders", Window: 8, Lease: 30e9},
	&Settle{ReqID: 7, Queue: "orders", ID: MessageID{Producer: 4, Seq: 5}, Lease: 9, Nack: true},
	&Unsubscribe{ReqID: 13, Queue: "orders"},
	&Purge{ReqID: 15, Queue: "orders", Token: MessageID{Producer: 4, Seq: 9}},
	&Extend{ReqID: 14, Queue: "orders", ID: MessageID{Producer: 4, Seq: 5}, Lease: 9, For: 90e9},
	&SettleBatch{Queue: "orders", Items: []SettleItem{{ReqID: 11, ID: MessageID{Producer: 4, Seq: 6}, Lease: 10},
		{ReqID: 12, ID: MessageID{Producer: 4, Seq: 7}, Lease: 12, Nack: true}}},
	&Reply{ReqID: 8, Status: StatusNotOwner, Owner: 2, Index: 77, Detail: "ask n2"},
	&Reply{ReqID: 8, Status: StatusOK, Depth: &QueueDepth{Ready: 3, Leased: 2, Delayed: 1, DeadLettering: 4, Consumers: 5}},
	&QueueInfo{ReqID: 16, Queue: "orders"},
	&MoveOwner{ReqID: 17, Queue: "orders", To: 3, DrainFor: 2e9},
	&AddNode{ReqID: 19, Node: 4, Addr: "10.0.0.4:7400", ClientAddr: "10.0.0.4:7300", HTTPAddr: "10.0.0.4:7500"},
	&RemoveNode{ReqID: 20, Node: 2},
	&MemberList{ReqID: 21},
	&Rebalance{ReqID: 22},
	&MemberListReply{ReqID: 21, Status: StatusOK, Leader: 1, Members: []MemberInfo{{ID: 1, Addr: "a:1", ClientAddr: "a:2", HTTPAddr: "a:3", Voter: true, Replicas: 3}, {ID: 4, Leaving: true, Down: true}}},
	&SetQueueOptions{ReqID: 18, Queue: "orders", DeadLetter: "orders-dead", MaxDeliveries: 5},
	&Delivery{Queue: "orders", ID: MessageID{Producer: 4, Seq: 5}, Lease: 9, Attempt: 2, Payload: []byte{}},
	&Append{Queue: "orders", Epoch: 3, PrevIndex: 10, PrevEpoch: 2, Commit: 9, Entries: []Entry{{Type: 2, Body: []byte("x")}, {Type: 3, Body: []byte{}}}},
	&Append{Queue: "idle", Epoch: 3, PrevIndex: 10, PrevEpoch: 3, Commit: 10, Stamp: 7, Rest: true},
	&Append{Queue: "orders", Epoch: 3, PrevIndex: 10, PrevEpoch: 3, Commit: 10, Stamp: 7,
		Delivered: []DeliveryCount{{ID: MessageID{Producer: 4, Seq: 5}, Count: 3}, {ID: MessageID{Producer: 4, Seq: 6}, Count: 1}}},
	&Append{Queue: "idle", Epoch: 3, PrevIndex: 10, PrevEpoch: 3, Commit: 10, Stamp: 7, Rest: true,
		Delivered: []DeliveryCount{{ID: MessageID{Producer: 4, Seq: 5}, Count: 3}}},
	&AppendReply{Queue: "orders", Incarnation: 5, Epoch: 3, OK: true, Match: 12, Last: 12, Durable: 11},
	&AppendReply{Queue: "orders", Incarnation: 5, Epoch: 3, OK: true, Match: 12, Last: 12, Durable: 11, DiskFull: true},
	&Raft{Data: []byte{1, 2, 3}},
	&Ping{Seq: 4, Term: 2},
	&Pong{Seq: 4},
	&Probe{Seq: 5, Target: 3},
	&ProbeAck{Seq: 5, Target: 3},
	&MetaCommitted{Index: 74, Term: 4},
	&SetDetection{ReqID: 9, Mode: 2, Interval: 100e6, Grace: 0},
	&Seal{Queue: "orders", Incarnation: 5, Epoch: 4},
	&SealReply{Queue: "orders", Incarnation: 5, Epoch: 4, OK: true, First: 1, Last: 9, LastEpoch: 3, Digest: []byte{1, 2}, HistoryID: 6, Instance: 7, Owner: 2, LeaseGrantAgo: 5e6},
	&SealReply{Queue: "orders", Incarnation: 5, Epoch: 4, OK: true, Digest: []byte{}, Released: true,
		Delivered: []DeliveryCount{{ID: MessageID{Producer: 4, Seq: 5}, Count: 2}}},
	&Fetch{Queue: "orders", Incarnation: 5, Epoch: 4, PrevIndex: 8, PrevEpoch: 3},
	&FetchReply{Queue: "orders", Incarnation: 5, Epoch: 4, OK: true, PrevIndex: 8, Hint: 0, Last: 10, Entries: []Entry{{Type: 2, Body: []byte("x")}}},
	&CheckpointAsk{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40},
	&CheckpointReceipt{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40, StateDigest: []byte{9, 8}},
	&CheckpointReceipt{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40, StateDigest: []byte{9, 8}, Instance: 77},
	&Checkpoint{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40, CutEpoch: 3, Digest: []byte{1, 2}, Offset: 2, Total: 9, State: []byte("state")},
	&CheckpointAck{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40, Received: 7},
}

func TestRoundTrip(t *testing.T) {
	for _, m := range samples {
		frame := Encode(nil, m)
		got, err := Decode(frame)
		if err != nil {
			t.Fatalf("%s: %v", m.Kind(), err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Fatalf("%s round trip (-sent +decoded):\n%s", m.Kind(), diff)
		}
	}
}

// A seal reply from a node that predates its last field decodes with the
// field zero, which the candidate reads as the cautious value; the field
// is read when it is there.
func TestSealReplyFromAnOlderNodeDecodes(t *testing.T) {
	m := &SealReply{Queue: "orders", Epoch: 4, OK: true, Last: 9, Digest: []byte{1}, LeaseGrantAgo: 5e6}
	full := m.AppendBody(nil)
	older := full[:len(full)-8]
	for _, c := range []struct {
		body []byte
		want uint64
	}{{full, 5e6}, {older, 0}} {
		d := NewDecoder(c.body)
		got := decodeSealReply(d)
		if err := d.Finish(); err != nil {
			t.Fatalf("a %d-byte body: %v", len(c.body), err)
		}
		if got.LeaseGrantAgo != c.want || got.Last != 9 {
			t.Fatalf("a %d-byte body decoded grant-ago %d last %d, want %d and 9", len(c.body), got.LeaseGrantAgo, got.Last, c.want)
		}
	}
}

// A create request from a client that predates the deduplication window
// decodes with none (the nodes' default), a window is read when it is
// there, and a request without one is encoded as the older frame, which
// an older node still takes.
func TestCreateQueueFromAnOlderClientDecodes(t *testing.T) {
	older := AppendUint64(nil, 4)
	older = AppendString(older, "orders")
	older = AppendUint8(older, uint8(PolicyAll))
	got, err := Decode(Encode(nil, rawBody{KindCreateQueue, older}))
	if err != nil {
		t.Fatal(err)
	}
	if c := got.(*CreateQueue); c.DedupWindow != 0 || c.Policy != PolicyAll || c.Queue != "orders" {
		t.Fatalf("an older create request decoded as %v", Describe(got))
	}
	if b := (&CreateQueue{ReqID: 4, Queue: "orders", Policy: PolicyAll}).AppendBody(nil); !bytes.Equal(b, older) {
		t.Fatalf("a create request without a window encodes as %x, not as the older %x", b, older)
	}
	with := (&CreateQueue{ReqID: 4, Queue: "orders", Policy: PolicyAll, DedupWindow: 90 * time.Second}).AppendBody(nil)
	got, err = Decode(Encode(nil, rawBody{KindCreateQueue, with}))
	if err != nil || got.(*CreateQueue).DedupWindow != 90*time.Second {
		t.Fatalf("a create request with a 90s window decoded as %v (%v)", Describe(got), err)
	}
	// A dead-letter queue without a window writes the window as zero,
	// which reads as the default.
	dead := (&CreateQueue{ReqID: 4, Queue: "orders", DeadLetter: "orders-dead", MaxDeliveries: 3}).AppendBody(nil)
	got, err = Decode(Encode(nil, rawBody{KindCreateQueue, dead}))
	if c, _ := got.(*CreateQueue); err != nil || c.DedupWindow != 0 || c.DeadLetter != "orders-dead" || c.MaxDeliveries != 3 {
		t.Fatalf("a create request with a dead-letter queue decoded as %v (%v)", Describe(got), err)
	}
}

// A receipt that names no process is the frame an older node sends, and
// one from an older node decodes with no process.
func TestCheckpointReceiptFromAnOlderNodeDecodes(t *testing.T) {
	older := AppendString(nil, "orders")
	for _, v := range []uint64{5, 4, 40} {
		older = AppendUint64(older, v)
	}
	older = AppendBytes(older, []byte{9, 8})
	if b := (&CheckpointReceipt{Queue: "orders", Incarnation: 5, Epoch: 4, Cut: 40, StateDigest: []byte{9, 8}}).AppendBody(nil); !bytes.Equal(b, older) {
		t.Fatalf("a receipt without a process encodes as %x, not as the older %x", b, older)
	}
	got, err := Decode(Encode(nil, rawBody{KindCheckpointReceipt, older}))
	if c, _ := got.(*CheckpointReceipt); err != nil || c.Instance != 0 || c.Cut != 40 {
		t.Fatalf("an older receipt decoded as %v (%v)", Describe(got), err)
	}
}

func TestCheckDeadLetter(t *testing.T) {
	for _, c := range []struct {
		dead  string
		limit uint32
		ok    bool
	}{
		{"", 0, true}, {"q-dead", 1, true}, {"q-dead", MaxDeliveriesLimit, true},
		{"", 3, false}, {"q-dead", 0, false}, {"q-dead", MaxDeliveriesLimit + 1, false}, {"q", 3, false},
	} {
		if err := CheckDeadLetter("q", c.dead, c.limit); (err == nil) != c.ok {
			t.Errorf("dead-letter queue %q after %d deliveries: %v, want accepted %t", c.dead, c.limit, err, c.ok)
		}
	}
}

func TestCheckDedupWindow(t *testing.T) {
	for d, ok := range map[time.Duration]bool{0: true, time.Second: true, 5 * time.Minute: true, 24 * time.Hour: true,
		-time.Second: false, 999 * time.Millisecond: false, 24*time.Hour + 1: false} {
		if err := CheckDedupWindow(d); (err == nil) != ok {
			t.Errorf("window %v: %v, want accepted %t", d, err, ok)
		}
	}
}

func TestMalformedFramesAreRefused(t *testing.T) {
	good := Encode(nil, samples[1])
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrShortFrame},
		{"short header", good[:5], ErrShortFrame},
		{"bad version", mutate(func(b []byte) []byte { b[0] = 9; return b }), ErrBadVersion},
		{"truncated", good[:len(good)-1], ErrLengthInvalid},
		{"extra byte", append(bytes.Clone(good), 0), ErrLengthInvalid},
		{"flipped body bit", mutate(func(b []byte) []byte { b[HeaderSize+2] ^= 4; return b }), ErrChecksum},
		{"oversize", mutate(func(b []byte) []byte { b[6] = 0xff; return b }), ErrTooLarge},
		{"unknown kind", Encode(nil, rawMessage{kind: 999}), ErrUnknownKind},
		{"short body", Encode(nil, rawMessage{kind: KindCounterAck, body: []byte{1, 2, 3}}), ErrTruncatedBody},
		{"trailing bytes", Encode(nil, rawMessage{kind: KindCounterProbe, body: make([]byte, 9)}), ErrTrailingBytes},
		{"bad bool", Encode(nil, rawMessage{kind: KindCounterAck, body: append(make([]byte, 16), 7)}), nil},
	}
	for _, c := range cases {
		_, err := Decode(c.frame)
		if err == nil {
			t.Errorf("%s: decoded without error", c.name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

// rawMessage lets tests put arbitrary bodies in well-formed frames.
type rawMessage struct {
	kind Kind
	body []byte
}

func (r rawMessage) Kind() Kind                 { return r.kind }
func (r rawMessage) AppendBody(b []byte) []byte { return append(b, r.body...) }

func TestDecodedMessagesDoNotAliasTheFrame(t *testing.T) {
	d := Decoder{buf: AppendBytes(nil, []byte("payload"))}
	got := d.Bytes()
	d2 := Decoder{buf: AppendBytes(nil, []byte("payload"))}
	frame := d2.buf
	got2 := d2.Bytes()
	frame[4] = 'X'
	if string(got) != "payload" || string(got2) != "payload" {
		t.Fatalf("decoded bytes alias the frame: %q %q", got, got2)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic, and
// whatever it accepts must re-encode to exactly the same frame.
func FuzzDecode(f *testing.F) {
	for _, m := range samples {
		f.Add(Encode(nil, m))
	}
	f.Add([]byte{Version, 10, 0, 255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := Decode(frame)
		if err != nil {
			return
		}
		if again := Encode(nil, m); !bytes.Equal(again, frame) {
			t.Fatalf("accepted frame %x re-encodes as %x", frame, again)
		}
	})
}

// TestRequestIDNamesEveryClientRequest checks RequestID against the
// kinds a client sends: each of those yields its ReqID, nothing else
// yields one (a Reply carries a ReqID too, but answers rather than asks).
func TestRequestIDNamesEveryClientRequest(t *testing.T) {
	want := map[Kind]uint64{KindCreateQueue: 1, KindDeleteQueue: 2, KindPublish: 3, KindSubscribe: 6, KindSettle: 7, KindSetDetection: 9, KindSettleBatch: 11, KindUnsubscribe: 13, KindExtend: 14, KindPurge: 15, KindQueueInfo: 16, KindMoveOwner: 17, KindSetQueueOptions: 18, KindAddNode: 19, KindRemoveNode: 20, KindMemberList: 21, KindRebalance: 22}
	seen := 0
	for _, m := range samples {
		id, ok := RequestID(m)
		wantID, isRequest := want[m.Kind()]
		if ok != isRequest || id != wantID {
			t.Errorf("RequestID(%s) = %d, %v; want %d, %v", m.Kind(), id, ok, wantID, isRequest)
		}
		if isRequest {
			seen++
		}
	}
	if seen != len(want) {
		t.Fatalf("the samples hold %d of the %d client request kinds", seen, len(want))
	}
}

// TestBodySizeMaxBoundsTheBody: the size a payload-carrying message
// announces is at least what it encodes to, so Encode grows its buffer
// once.
func TestBodySizeMaxBoundsTheBody(t *testing.T) {
	payload := make([]byte, 300)
	for _, m := range []Message{
		&Delivery{Queue: "orders", ID: MessageID{Producer: 1, Seq: 2}, Lease: 3, Attempt: 4, Payload: payload},
		&Delivery{},
		&Publish{ReqID: 1, Queue: "q", ID: MessageID{Producer: 1, Seq: 2}, Delay: 5, Payload: payload},
		&Publish{},
		&Append{Queue: "orders", Epoch: 1, Entries: []Entry{{Type: 1, Body: payload}, {Type: 2}}},
		&Append{Queue: "orders", Epoch: 1, Entries: []Entry{{Type: 1, Body: payload}},
			Delivered: []DeliveryCount{{ID: MessageID{Producer: 1, Seq: 2}, Count: 3}, {ID: MessageID{Producer: 1, Seq: 3}, Count: 1}}},
		&Append{},
	} {
		want := len(m.AppendBody(nil))
		got := m.(bodySizer).bodySizeMax()
		if got < want || got > want+8 {
			t.Errorf("%T: bodySizeMax %d for a body of %d bytes", m, got, want)
		}
		if frame := Encode(nil, m); cap(frame) != len(frame) && cap(frame)-len(frame) > 64 {
			t.Errorf("%T: a frame of %d bytes in a buffer of %d", m, len(frame), cap(frame))
		}
	}
}

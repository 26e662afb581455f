package wire

import (
	"slices"
	"testing"
)

// A batch stands for its items as separate Settles, and whoever answers
// for a node answers every item's request.
func TestSettleBatchUnpacksIntoItsSettles(t *testing.T) {
	b := &SettleBatch{Queue: "orders", Items: []SettleItem{
		{ReqID: 3, ID: MessageID{Producer: 1, Seq: 1}, Lease: 5},
		{ReqID: 4, ID: MessageID{Producer: 1, Seq: 2}, Lease: 6, Nack: true},
	}}
	got := b.Settles()
	want := []Settle{{ReqID: 3, Queue: "orders", ID: MessageID{Producer: 1, Seq: 1}, Lease: 5},
		{ReqID: 4, Queue: "orders", ID: MessageID{Producer: 1, Seq: 2}, Lease: 6, Nack: true}}
	if len(got) != len(want) {
		t.Fatalf("%d settles, want %d", len(got), len(want))
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Fatalf("settle %d is %+v, want %+v", i, *got[i], want[i])
		}
	}
	if ids := RequestIDs(b); !slices.Equal(ids, []uint64{3, 4}) {
		t.Fatalf("RequestIDs of the batch: %v", ids)
	}
	if ids := RequestIDs(&Publish{ReqID: 9}); !slices.Equal(ids, []uint64{9}) {
		t.Fatalf("RequestIDs of a publish: %v", ids)
	}
	if ids := RequestIDs(&Reply{ReqID: 9}); ids != nil {
		t.Fatalf("a reply is no request, yet RequestIDs gives %v", ids)
	}
}

// A batch that claims more items than its body holds is refused before
// anything is allocated for them.
func TestSettleBatchRefusesAnOverstatedCount(t *testing.T) {
	body := AppendString(nil, "q")
	body = AppendUint32(body, 1<<30)
	if _, err := Decode(Encode(nil, rawMessage{kind: KindSettleBatch, body: body})); err == nil {
		t.Fatal("a batch of 2^30 items in a few bytes decoded")
	}
}

package props

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/sim"
	"github.com/cairnmq/cairn/wire"
)

// A delivery whose payload differs from the published one, by one bit, is
// a safety violation; the same payload delivered twice is not.
func TestIntactCheckerFlagsAChangedPayload(t *testing.T) {
	m := wire.MessageID{Producer: 1, Seq: 1}
	published := []byte("the payload as published")
	changed := []byte("the payload as published")
	changed[4] ^= 0x08
	history := func(delivered ...[]byte) *sim.History {
		h := &sim.History{Ops: []sim.OpRecord{
			{Client: 0, Kind: "publish", Queue: "q", ID: m, Outcome: sim.OutcomeOK, Sum: sim.PayloadSum(published)},
		}}
		for i, p := range delivered {
			h.Deliveries = append(h.Deliveries, sim.DeliveryRecord{Client: 1, Queue: "q", ID: m, Lease: uint64(i + 1), From: 2,
				Received: time.Duration(i+1) * time.Millisecond, Sum: sim.PayloadSum(p)})
		}
		return h
	}
	if v := checkIntact(newIndex(history(published, published))); len(v) != 0 {
		t.Fatalf("the published payload delivered twice: %v, want no violation", v)
	}
	v := checkIntact(newIndex(history(published, changed)))
	if len(v) != 1 || v[0].Checker != "payload-intact" || v[0].Kind != sim.Safety {
		t.Fatalf("a payload with one bit flipped: %v, want one payload-intact safety violation", v)
	}
	if sim.PayloadSum(nil) == sim.PayloadSum([]byte{0}) {
		t.Fatal("an empty payload and a zero byte have the same digest")
	}
}

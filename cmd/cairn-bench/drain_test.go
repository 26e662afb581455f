package main

import (
	"testing"

	"github.com/cairnmq/cairn/client"
)

// TestDrainHandlerCountsARoundByItsNumbers publishes, as a second round
// does, a run of numbers that does not start at 1, and checks that the
// handler counts each message once, ends when every one was seen, and
// reports a delivery of a message the round did not publish.
func TestDrainHandlerCountsARoundByItsNumbers(t *testing.T) {
	var published []client.MessageID
	for seq := uint64(101); seq <= 103; seq++ {
		published = append(published, client.MessageID{Producer: 7, Seq: seq})
	}
	h, err := newDrainHandler(published, false)
	if err != nil {
		t.Fatal(err)
	}
	see := func(id client.MessageID) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.note(id)
	}
	see(published[1])
	see(published[1]) // a redelivery counts once
	see(published[0])
	if n := h.count(); n != 2 {
		t.Fatalf("counted %d distinct messages, want 2", n)
	}
	select {
	case <-h.all:
		t.Fatal("the handler ended before the last message")
	default:
	}
	see(published[2])
	<-h.all
	if err := h.problems(); err != nil {
		t.Fatalf("a clean drain reports %v", err)
	}
	see(client.MessageID{Producer: 7, Seq: 104})
	see(client.MessageID{Producer: 8, Seq: 101})
	if err := h.problems(); err == nil {
		t.Fatal("two deliveries of messages the round did not publish went unreported")
	}
	if _, err := newDrainHandler(append(published, client.MessageID{Producer: 7, Seq: 200}), false); err == nil {
		t.Fatal("a round whose numbers leave a gap was accepted")
	}
}

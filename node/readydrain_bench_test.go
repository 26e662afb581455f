package node

import "testing"

// BenchmarkReadyDrain makes 200,000 messages ready in publish order and
// takes them all, as an owner draining a backlog does: the cost of one
// message's way through the ready queue.
func BenchmarkReadyDrain(b *testing.B) {
	const backlog = 200_000
	msgs := make([]message, backlog)
	for b.Loop() {
		s := newQueueState("orders")
		for i := range msgs {
			msgs[i] = message{index: uint64(i + 1), key: readyKey{at: uint64(i + 1), index: uint64(i + 1)}}
			s.pushReady(&msgs[i])
		}
		for range backlog {
			if s.popReady() == nil {
				b.Fatal("the ready queue ran dry before the backlog did")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*backlog), "ns/msg")
}

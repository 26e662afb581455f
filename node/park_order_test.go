package node

import (
	"slices"
	"testing"
)

// TestParkAllMatchesParkingOneByOne parks a turn's acks, all waiting for
// one index, among requests already waiting for lower, equal and higher
// indexes, once with parkAll and once with park after park: the queue of
// waiters, and so the order the answers go out in, is the same.
func TestParkAllMatchesParkingOneByOne(t *testing.T) {
	waiting := []waiter{{reqID: 1, index: 7}, {reqID: 2, index: 9}, {reqID: 3, index: 9}, {reqID: 4, index: 12}}
	for _, index := range []uint64{6, 7, 9, 10, 12, 13} {
		var turn []waiter
		for req := uint64(100); req < 105; req++ {
			turn = append(turn, waiter{reqID: req, index: index})
		}
		one := &ownerState{commit: 5, waiters: slices.Clone(waiting)}
		for _, w := range turn {
			one.park(w)
		}
		all := &ownerState{commit: 5, waiters: slices.Clone(waiting)}
		all.parkAll(slices.Clone(turn))
		if !slices.Equal(one.waiters, all.waiters) {
			t.Fatalf("index %d: parked one by one %v, all at once %v", index, one.waiters, all.waiters)
		}
	}
}

package node

import "testing"

// A failed lifecycle proposal is followed by a reconcile at once only
// when the queue moved to another epoch or incarnation while it was out,
// and the proposal reached the metadata at all.
func TestReconcileAtOnceAfterAFailure(t *testing.T) {
	at := func(inc, epoch uint64) queueEpoch { return queueEpoch{inc: inc, epoch: epoch} }
	cases := []struct {
		name        string
		before, now queueEpoch
		res         result
		want        bool
	}{
		{"refused after a newer plan applied", at(7, 2), at(7, 3), result{detail: "epoch is 3, not 2"}, true},
		{"timed out while the epoch moved", at(7, 2), at(7, 3), result{detail: "timed out waiting for the metadata leader"}, true},
		{"a new incarnation of the queue", at(7, 2), at(8, 0), result{detail: "not active"}, true},
		{"the queue was deleted", at(7, 2), queueEpoch{}, result{detail: "not active"}, true},
		{"refused with the epoch unchanged", at(7, 2), at(7, 2), result{detail: "not the owner"}, false},
		{"timed out with the epoch unchanged", at(7, 2), at(7, 2), result{detail: "timed out waiting for the metadata leader"}, false},
		{"dropped before any leader took it", at(7, 2), at(7, 3), result{detail: "no metadata leader", dropped: true}, false},
	}
	for _, tc := range cases {
		if got := reconcileAtOnce(tc.before, tc.now, tc.res); got != tc.want {
			t.Errorf("%s: reconcileAtOnce = %v, want %v", tc.name, got, tc.want)
		}
	}
}

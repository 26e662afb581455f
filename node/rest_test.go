package node

import "testing"

// A follower takes its owner's word that it rests only for the epoch the
// word was given in. Sealed by a candidate of a newer epoch, it no longer
// dozes on the old owner's word: it does its per-tick work each tick
// again, and holds requests back for a silent owner again (ownerSilent),
// until the new owner's own appends say whether it rests.
func TestAnOwnersRestCountsOnlyInItsEpoch(t *testing.T) {
	r := &replica{role: roleFollower, epoch: 4, follow: &followerState{restsIn: 4}}
	if !r.ownerRests() || !r.dozing() {
		t.Fatal("a follower whose owner said it rests in the follower's epoch does not doze")
	}
	r.epoch = 5 // sealed by the next epoch's candidate
	if r.ownerRests() || r.dozing() {
		t.Fatal("a follower sealed at epoch 5 dozes on the word of epoch 4's owner")
	}
	r.follow.restsIn = 0
	if r.ownerRests() {
		t.Fatal("a follower whose owner never said it rests thinks it rests")
	}
}

// Package bugs names the deliberate defects that can be planted in cairn
// to prove the simulator finds them. In an ordinary build Active is a
// constant false and the compiler removes every planted branch; built with
// the cairn_bugs tag, a bug is switched on by name before a run.
package bugs

// Planted bug names.
const (
	// ConfirmBeforeSync: the owner counts its own appended, unsynced
	// records toward confirmation.
	ConfirmBeforeSync = "confirm-before-sync"
	// FollowerAckBeforeSync: a follower reports appended records as
	// durable before its sync completes.
	FollowerAckBeforeSync = "follower-ack-before-sync"
	// SkipDirSync: the log renames a new segment into place without
	// syncing the directory, so the rename can vanish at a crash.
	SkipDirSync = "skip-dir-sync"
	// DropNack: a nacked message is dropped instead of being made ready
	// again.
	DropNack = "drop-nack"
	// RaftSendBeforePersist: a metadata voter sends raft messages (votes,
	// append acknowledgements) before their Ready is on disk.
	RaftSendBeforePersist = "raft-send-before-persist"
	// EpochNotDurable: a restarted owner takes its next epoch from local
	// memory instead of committing it through metadata, so the epoch is
	// never durable and can be handed out twice.
	EpochNotDurable = "epoch-not-durable"
	// SkipSeal: a recovery candidate selects its source without waiting
	// for a quorum of sealed witnesses.
	SkipSeal = "skip-seal"
	// ShortestSource: recovery selects the least complete witness.
	ShortestSource = "shortest-source"
	// ActivateWithoutQuorum: a recovered owner activates as soon as its own
	// copy of the history is installed.
	ActivateWithoutQuorum = "activate-without-quorum"
	// AcceptStaleEpoch: a replica accepts appends from an epoch older than
	// the one it was sealed at.
	AcceptStaleEpoch = "accept-stale-epoch"
	// InstallBeforeReadsDone: recovery starts installing the recovered
	// history on replicas before it has finished reading its source.
	InstallBeforeReadsDone = "install-before-reads-done"
	// RestartOwnerTrustsOwnLog: an owner that restarts claims the queue at
	// a new epoch with whatever its own log holds, without sealing the
	// other replicas and selecting the most complete history first.
	RestartOwnerTrustsOwnLog = "restart-owner-trusts-own-log"
	// CheckpointDropsUnacked: a checkpoint leaves out the newest live
	// message, so a replica that starts from it has lost that message.
	CheckpointDropsUnacked = "checkpoint-drops-unacked"
	// DedupForgetsEarly: a queue forgets published IDs after a quarter of
	// the deduplication window, so a retry inside the window is stored
	// twice.
	DedupForgetsEarly = "dedup-forgets-early"
	// CompactBeforeCertificate: a replica drops log segments below its own
	// checkpoint's cut without waiting for the metadata to certify a cut
	// that covers them.
	CompactBeforeCertificate = "compact-before-certificate"
	// CertificateMissingReceipt: the owner proposes a checkpoint
	// certificate as soon as a majority of the replica set reported the
	// same state, not every replica.
	CertificateMissingReceipt = "certificate-missing-receipt"
	// WindowJournalUnsynced: a checkpoint build writes its checkpoint file
	// without waiting for the window entries it appended to the journal to
	// be durable, so a crash can leave a checkpoint that names entries the
	// disk lost.
	WindowJournalUnsynced = "window-journal-unsynced"
	// AckBatchDropsOne: an owner writing the acks of a turn as one
	// record leaves the last one out, yet confirms it with the others.
	AckBatchDropsOne = "ack-batch-drops-one"
	// AdmitBeforeInstallQuorum: a recovery candidate becomes owner and
	// admits clients as soon as its own copy of the epoch marker is
	// durable, before an exact quorum holds the marker and before the
	// metadata activated its epoch.
	AdmitBeforeInstallQuorum = "admit-before-install-quorum"
	// ServeWithoutQuorum: an owner that has heard from no quorum of its
	// replicas for longer than its peers wait before replacing it goes on
	// serving its clients (and saying it serves) instead of stepping
	// back until it hears from them again.
	ServeWithoutQuorum = "serve-without-quorum"
	// ExtendIgnored: an owner answers a lease extension OK but leaves the
	// lease to run out when it would have anyway.
	ExtendIgnored = "extend-ignored"
	// PurgeBeyondCut: an owner whose purge waits for its confirmation
	// also settles the messages published meanwhile, as if the purge's
	// cut were where it is confirmed rather than where it was written.
	PurgeBeyondCut = "purge-beyond-cut"
	// LeaseClockCountsTicks: a node's lease clock counts its own timer
	// ticks instead of reading the monotonic clock, so it stops while
	// the process is stopped: an owner resumed after a long pause finds
	// its delivery lease young and delivers before it hears that a new
	// owner took the queue meanwhile.
	LeaseClockCountsTicks = "lease-clock-counts-ticks"
	// SealAnswerBeforeEpochSync: a sealed replica answers the candidate as
	// soon as its log is durable, while the new epoch is still being
	// written, so a crash can bring it back at the old epoch after it
	// counted as a witness of the new one.
	SealAnswerBeforeEpochSync = "seal-answer-before-epoch-sync"
	// ReplaceNeverDue: the metadata leader restarts its count of how long
	// a replica has been down at every planning pass, so the count never
	// reaches ReplaceAfter and no replica that stays down is replaced.
	ReplaceNeverDue = "replace-never-due"
	// RestartOwnerWaits: an owner that restarted holds back from claiming
	// its queues until it has been up for ReplaceAfter, as if to let the
	// metadata replace it first; its queues go unserved meanwhile.
	RestartOwnerWaits = "restart-owner-waits"
	// DeadLetterTwice: a source queue's owner asks the dead-letter queue
	// to store a message as soon as it appended the message's dead-letter
	// record, before the record is confirmed. An owner lost meanwhile can
	// leave a history without the record, and the next owner delivers the
	// message from the source queue though the dead-letter queue holds
	// it: the message is in both.
	DeadLetterTwice = "dead-letter-twice"
	// HandoffBeforeDrain: an owner handing its queue over on request
	// proposes the next owner at once, without waiting for what it has in
	// flight to be confirmed, and tells those publishers their messages
	// are confirmed, trusting the next owner to take its log. The next
	// owner's recovery may select a history sealed before those records
	// reached a quorum.
	HandoffBeforeDrain = "handoff-before-drain"
	// RemoveVoterWithoutReplacement: the metadata leader removes a
	// leaving node that votes in the metadata group at once, without
	// first promoting a learner to take its seat, and the state machine
	// lets it: the group shrinks below three voters while a member could
	// have voted, one failure away from losing its quorum.
	RemoveVoterWithoutReplacement = "remove-voter-without-replacement"
	// RebalanceIgnoresSlack: a rebalance moves a replica whenever two
	// members' counts differ at all. Counts that cannot be even (seven
	// replicas on three nodes) then swap back and forth, one recovery
	// after another, and the rebalance never ends.
	RebalanceIgnoresSlack = "rebalance-ignores-slack"
	// ReadSkipsVerify: a log reader trusts the frames the open-time scan
	// verified and skips their checksums on read, so damage that appears
	// while the log is open (a decaying medium) is read as data: sent to
	// followers, rebuilt into state, written into checkpoints.
	ReadSkipsVerify = "read-skips-verify"
	// CheckpointTrimsPayload: a queue state's encoding leaves out the last
	// byte of each live message's payload. Every replica trims alike, so
	// their checkpoints agree and are certified; a replica that starts
	// from one delivers what it holds one byte short.
	CheckpointTrimsPayload = "checkpoint-trims-payload"
	// DamagedStateReadAsNew: a replica whose state file (its identity and
	// epoch) fails its checksum at open removes it and starts as if it
	// had never been prepared, instead of fencing itself. It forgets the
	// epochs it gave its word in, and can obey an owner they fenced.
	DamagedStateReadAsNew = "damaged-state-read-as-new"
	// OwnerCountsReplacementSet: an owner still serving its epoch adopts a
	// planned replacement's set at once, so it confirms records on itself
	// and the newcomer, a pair the replacement's seal of the prior set
	// never asks. The newcomer also promises no epoch when it is prepared:
	// since it promises the plan's (seed 956518's fix), it refuses the
	// older owner's appends, which alone keeps the first defect harmless.
	OwnerCountsReplacementSet = "owner-counts-replacement-set"
	// DeadLetterForgetsMove: a dead-letter queue answers a move asked for
	// again from its deduplication window alone, ignoring the moves it
	// remembers until their source settles them, so a source that asks
	// again after the window has the message stored twice.
	DeadLetterForgetsMove = "dead-letter-forgets-move"
	// CertifyWaitsForLost: an owner asks every replica of the set for its
	// checkpoint, those fenced for damage included, so a queue with a
	// lost replica and no node to replace it never certifies a cut again
	// and its disk grows without bound.
	CertifyWaitsForLost = "certify-waits-for-lost"
	// RejoinedReplicaTrusted: a node started over an empty data directory
	// to rejoin (its disk was lost) prepares its replicas as trusted
	// newcomers, though it may once have reported records durable that
	// they no longer hold: a seal may then take an empty replica's word
	// for a queue's history.
	RejoinedReplicaTrusted = "rejoined-replica-trusted"
	// RejoinUnmarked: a member starting over an empty data directory to
	// rejoin keeps no durable record of it, so a process restarted before
	// it caught up finds the bootstrap it wrote, takes itself for whole,
	// and votes.
	RejoinUnmarked = "rejoin-unmarked"
	// ConfCommitLags: a metadata member loads with the commit index its
	// hard state holds even when its log proves later configuration
	// changes committed, so after a lost hard-state write it counts votes
	// by a configuration two changes old.
	ConfCommitLags = "conf-commit-lags"
	// CommitNotTold: a metadata member asked for its vote tells the
	// candidate nothing of what it knows to be committed, as etcd raft
	// alone does, so a candidate whose commit lags a configuration change
	// may count votes by a configuration the group has left and never win.
	CommitNotTold = "commit-not-told"
	// LeaseNumbersRestart: every owner process numbers its leases from 1,
	// so a consumer's nack or extension of a lease granted by an earlier
	// process (before a restart or a failover) can name a lease this one
	// granted another consumer, and end it.
	LeaseNumbersRestart = "lease-numbers-restart"
	// ProposalNumbersRestart: every process numbers its metadata
	// proposals from 1, so an entry an earlier process proposed, applied
	// after a restart, answers this process's proposal of the same
	// number with its own result.
	ProposalNumbersRestart = "proposal-numbers-restart"
	// ServeBeforeGrantsOutwaited: a recovered owner serves as soon as the
	// metadata activates it, while an older owner or candidate may still
	// serve on acceptances its sealed witnesses gave just before the seal.
	ServeBeforeGrantsOutwaited = "serve-before-grants-outwaited"
	// OutwaitServesClients: a recovered owner that still outwaits an older
	// owner's quorum serves every client, not only publishes: it takes
	// subscriptions and acks and delivers what was published in its own
	// epoch (its hold still keeps back the messages it recovered), while
	// the older owner may still be delivering.
	OutwaitServesClients = "outwait-serves-clients"
	// RollPastCommit: a replica rolls the base of its next checkpoint
	// build forward to everything durable in its log, not only to the
	// known commit, and keeps it when a truncation cuts below it. A
	// follower's unconfirmed records that a newer owner replaces stay in
	// its base, and its next checkpoint, or the state it serves from if it
	// becomes the owner, holds messages the queue's history does not.
	RollPastCommit = "roll-past-commit"
	// RestKeepsGrant: a resting owner counts its quorum's grant as held
	// for as long as it rests, though it stopped renewing it, so while a
	// partition keeps it from hearing that a newer owner took its queue it
	// goes on saying it serves, and answers clients.
	RestKeepsGrant = "rest-keeps-grant"
	// SyncSkipsWriteOut: a log starts a sync without first writing out
	// the frames it gathered in memory, and counts them durable once the
	// sync completes, though the file never held them.
	SyncSkipsWriteOut = "sync-skips-write-out"
	// MajorityOfTwo: a node counts a majority of a queue's replicas as
	// two, which is right for three replicas only: an owner of a
	// five-replica queue confirms what two of them hold, and a recovery,
	// sealing three of five, can miss it.
	MajorityOfTwo = "majority-of-two"
	// LeaveIgnoresReplicas: the metadata lets a member leave though the
	// members that stay are fewer than a queue's replicas, so the
	// leaving member's replicas have nowhere to go.
	LeaveIgnoresReplicas = "leave-ignores-replicas"
	// LearnersStayLearners: the metadata leader promotes a learner only
	// to take a retiring voter's seat, never to grow the group, so a
	// cluster grown by joins keeps the voters it was founded with.
	LearnersStayLearners = "learners-stay-learners"
	// LeavingVoterKeepsSeat: a leaving voter keeps its metadata seat
	// unless it is also down, so it can never be removed and stays
	// leaving for good.
	LeavingVoterKeepsSeat = "leaving-voter-keeps-seat"
	// OwnerOnlyReplicasStay: the metadata leader replaces no replica of
	// an owner-only queue, a leaving member's included, so a member that
	// holds one never finishes leaving (the defect leave-completes found).
	OwnerOnlyReplicasStay = "owner-only-replicas-stay"
	// ReadErrorIsDamage: an I/O error reading a checkpoint's window
	// journal at a restart is taken for damage, and the sound replica
	// fences itself rather than the node halting to read again.
	ReadErrorIsDamage = "read-error-is-damage"
	// OwnerEpochFromMemory: an owner about to open an epoch by itself
	// asks whether its replica holds the epoch in memory rather than on
	// disk, so a restarted owner serves a new epoch it never recorded and
	// can come back below it after a crash.
	OwnerEpochFromMemory = "owner-epoch-from-memory"
	// StackDropsPriorQuorum: a replacement stacked on a pending one may
	// swap out members of the prior set until one is left in the new set,
	// so when that one is lost no member can lead the recovery and the
	// queue never activates again.
	StackDropsPriorQuorum = "stack-drops-prior-quorum"
	// PriorNeverSwappedBack: a pending replacement that no member of
	// both sets can lead waits for one, though a prior member that holds
	// every confirmed record is up outside the set; under the all policy,
	// whose stacked plans may keep a single prior member, the queue never
	// activates again once that member is lost.
	PriorNeverSwappedBack = "prior-never-swapped-back"
	// CreateAnsweredAtCommit: a create is answered ok as soon as the
	// metadata commits it, while its replicas are still being prepared,
	// so a client told its queue exists finds it not yet serving.
	CreateAnsweredAtCommit = "create-answered-at-commit"
	// QuietSubscriberFed: an owner keeps filling the window of a
	// subscription whose leases run out with no word from its consumer,
	// as if the consumer were alive.
	QuietSubscriberFed = "quiet-subscriber-fed"
	// AckByIDIgnored: an owner takes an ack that names no lease (one
	// sent by the message's ID to the queue's owner, as a gateway that
	// did not receive the message sends it) for one it need not act on,
	// and answers it with success without settling anything.
	AckByIDIgnored = "ack-by-id-ignored"
	// UnsubscribeDropsExtended: an unsubscribe hands back every lease of
	// the subscription, also those a consumer extended because it is still
	// working on their messages.
	UnsubscribeDropsExtended = "unsubscribe-drops-extended"
	// DeliveryCountsSummed: a recovery candidate adds up the delivery
	// counts its sealed replicas report for a message instead of taking
	// the highest, so a recovered owner says a message went out more
	// often than it did, and dead-letters it early.
	DeliveryCountsSummed = "delivery-counts-summed"
	// DedupWindowUnchecked: a node takes the deduplication window a
	// create asks for without checking its bounds, so a queue is made
	// with a negative window, one under a second or one over a day.
	DedupWindowUnchecked = "dedup-window-unchecked"
	// CompactOnlyWhenCertified: a replica tries to drop the segments a
	// certificate covers only when it applies the certificate, not on
	// its ticks after, so one whose checkpoint, or whose first segment's
	// sync, came later keeps them until the next certificate.
	CompactOnlyWhenCertified = "compact-only-when-certified"
	// DeleteKeepsReplicas: a node keeps its replica of a queue the
	// metadata deleted, answering for a queue nobody serves, its files
	// never removed.
	DeleteKeepsReplicas = "delete-keeps-replicas"
)

// All lists every planted bug.
var All = []string{ConfirmBeforeSync, FollowerAckBeforeSync, SkipDirSync, DropNack, RaftSendBeforePersist, EpochNotDurable,
	SkipSeal, ShortestSource, ActivateWithoutQuorum, AcceptStaleEpoch, InstallBeforeReadsDone, RestartOwnerTrustsOwnLog,
	CheckpointDropsUnacked, DedupForgetsEarly, CompactBeforeCertificate, CertificateMissingReceipt, WindowJournalUnsynced,
	AckBatchDropsOne, AdmitBeforeInstallQuorum, ServeWithoutQuorum, ExtendIgnored,
	LeaseClockCountsTicks, SealAnswerBeforeEpochSync, ReplaceNeverDue, RestartOwnerWaits, DeadLetterTwice,
	PurgeBeyondCut, HandoffBeforeDrain, RemoveVoterWithoutReplacement, RebalanceIgnoresSlack, ReadSkipsVerify,
	CheckpointTrimsPayload, DamagedStateReadAsNew, OwnerCountsReplacementSet, DeadLetterForgetsMove, CertifyWaitsForLost,
	RejoinedReplicaTrusted, RejoinUnmarked, ConfCommitLags, CommitNotTold, LeaseNumbersRestart, ServeBeforeGrantsOutwaited, RollPastCommit,
	OutwaitServesClients, RestKeepsGrant, SyncSkipsWriteOut, MajorityOfTwo, LeaveIgnoresReplicas, LearnersStayLearners,
	LeavingVoterKeepsSeat, OwnerOnlyReplicasStay, ReadErrorIsDamage, OwnerEpochFromMemory, StackDropsPriorQuorum,
	PriorNeverSwappedBack, CreateAnsweredAtCommit, QuietSubscriberFed, AckByIDIgnored, UnsubscribeDropsExtended, DeliveryCountsSummed,
	ProposalNumbersRestart, DedupWindowUnchecked, CompactOnlyWhenCertified, DeleteKeepsReplicas}

// SwarmBlind names the planted bugs the seeded swarm is not expected to
// catch, and why. Each is caught by a hand-written scenario in the seed
// corpus instead; the hunts over generated seeds pass them by.
var SwarmBlind = map[string]string{
	OwnerCountsReplacementSet: "it needs a replacement planned while the owner is alive and serving, a record it " +
		"confirms on the newcomer in between, and the owner then failing: the long sweep found the defect at seed 9597, " +
		"seeds 12145 and 3868 caught it in turn until code changes moved their runs, and its corpus file is now a " +
		"hand-written five-node story that lines the three up on purpose",
	LeaseNumbersRestart: "it needs a consumer whose nack or extension of a delivery outlives the owner process " +
		"that granted it, arriving after the next process delivered the same message again under the same number: " +
		"seeds 1-3000 escape it at the commit that planted it, the long sweep met it at seed 139582 (an owner-only " +
		"queue whose owner's disk failed every few hundred milliseconds), and its corpus file is a hand-written " +
		"scenario whose owner-only queue's owner crashes every 300ms",
	ProposalNumbersRestart: "it needs a node that restarts with entries of its earlier process still to apply, and a " +
		"membership request answered by the new process before they do: the sweep that found the defect caught it " +
		"at seed 12, which drew its add-node asked twice; as drawn since, seeds 1-1000 escape it, and its corpus " +
		"file is seed 12's scenario with that repeat written in",
	HandoffBeforeDrain: "it needs a handoff requested while publishes are in flight, and the next owner's seal " +
		"to miss a record that reached only the old owner: at " +
		"1e66877 the swarm lines this up first at seed 160, past the hunt's bound (seed 94 did before the owner " +
		"silence limit shortened), and its corpus file, that seed's scenario, catches it",
	RestKeepsGrant: "it needs a resting owner cut off by a partition that keeps it from hearing of the newer owner, " +
		"and a client that reaches it meanwhile: at 9dd2525 seed 332 alone of 1-2,000 lined these up; five-replica " +
		"queues moved that seed's run, and since then no seed of 1-2,000 does; its corpus file is seed 332's scenario " +
		"as drawn before, which still catches it",
	RejoinedReplicaTrusted: "it needs a node to lose its disk while it alone with the owner holds some confirmed records " +
		"(another replica cut off), and the owner to die before the rejoined node refilled its replica: no seed of 1-500 " +
		"lines these up, and its corpus file is a hand-written five-node story",
	RejoinUnmarked: "it needs a node to lose its disk and crash again before it catches up, while an election " +
		"needs its vote: the long sweep found the defect at seed 118545, and its corpus file is a hand-written " +
		"three-node story of that seed's defect",
	ServeBeforeGrantsOutwaited: "it needs a recovery planned while a follower still takes the old owner's appends " +
		"(the owner cut off from the metadata leader alone, or a late older candidate), the follower's refusals " +
		"after its seal held back, and a poll landing in the few tens of milliseconds both serve: seeds 1-1623 " +
		"escape it at 1e66877, and its corpus file is a hand-written story that lines these up",
	ConfCommitLags: "it needs a member's hard-state write to fail after its log took two configuration changes, and an " +
		"election it can win by the old configuration: the long sweep found the defect at seed 123899, and that seed's " +
		"scenario is its corpus file",
	CommitNotTold: "it needs a demotion committed with the demoted member's acknowledgement, the other voters' " +
		"hard-state writes failing before they record it, the demoted member holding a longer log than they do, and " +
		"the leader never coming back whole: the long sweep found it at seed 712932, and that seed's scenario is its " +
		"corpus file",
	StackDropsPriorQuorum: "it needs a majority queue's replacement pending while its owner is down, a second member " +
		"of the prior set down long enough to be swapped out too, and the one prior member left then found damaged: " +
		"the long sweep found the defect at seed 876782, and that seed's scenario is its corpus file",
}

// Known reports whether name is a planted bug.
func Known(name string) bool {
	for _, b := range All {
		if b == name {
			return true
		}
	}
	return false
}

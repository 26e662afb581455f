package event

// The attribute keys. Like the names, each string is part of the
// simulator's trace and of the production log lines that tools read back
// (live/eventlog), so it is spelt here once. Each key's comment names the
// accessor that reads it.
const (
	// KeyQueue carries the queue's name (Queue).
	KeyQueue Key = "q"

	// KeyEpoch carries an owner epoch: the replica's, the new one being
	// recovered or planned, or the one an append carried (Epoch).
	KeyEpoch Key = "epoch"

	// KeyInc carries a queue incarnation (Inc).
	KeyInc Key = "inc"

	// KeyTerm carries a metadata raft term (Term).
	KeyTerm Key = "term"

	// KeyNode carries the node an event is about: a number, or in
	// meta.follower-lost-log a node name (Node).
	KeyNode Key = "node"

	// KeyLast carries the last index of a log (Last).
	KeyLast Key = "last"

	// KeyIndex carries a log index: durable, committed, confirmed or
	// snapshotted (Index).
	KeyIndex Key = "index"

	// KeyAfter carries the index after which a replica dropped its log
	// (After).
	KeyAfter Key = "after"

	// KeyDurable carries how much a replica holds durably (Durable).
	KeyDurable Key = "durable"

	// KeyCommit carries the metadata commit index a member caught up to
	// (Commit).
	KeyCommit Key = "commit"

	// KeyRaised carries how many delivery counts a recovered owner raised
	// (Raised).
	KeyRaised Key = "raised"

	// KeyCounted carries the metadata index through which the leader
	// counted a follower that lost its log (Counted).
	KeyCounted Key = "counted"

	// KeyTransferTo carries the node the leader hands its leadership to,
	// zero for none (TransferTo).
	KeyTransferTo Key = "transfer-to"

	// KeyNext carries the owner the metadata names next (Next).
	KeyNext Key = "next"

	// KeyOut carries the replica a replacement removes (Out).
	KeyOut Key = "out"

	// KeyIn carries the node a replacement adds (In).
	KeyIn Key = "in"

	// KeyFrom carries where something came from: a node, or in queue.role
	// the old role (From, FromNode).
	KeyFrom Key = "from"

	// KeyTo carries where something goes: a node, or in queue.role the new
	// role (To, ToNode).
	KeyTo Key = "to"

	// KeyWhy carries an explanation for people (Why).
	KeyWhy Key = "why"

	// KeyErr carries an error's message (Err).
	KeyErr Key = "err"

	// KeyID carries a message ID (ID).
	KeyID Key = "id"

	// KeyLease carries a delivery lease (Lease).
	KeyLease Key = "lease"
	// KeyHeld carries how many unsettled messages a recovered owner held
	// back (QueueHoldEnded).
	KeyHeld Key = "held"

	// KeyMembers carries the members a recovered owner's activation, or a
	// checkpoint certificate, names (Members).
	KeyMembers Key = "members"

	// KeyReplicas carries a queue's replica set after a replacement
	// (Replicas).
	KeyReplicas Key = "replicas"

	// KeyVoters and KeyLearners carry the metadata group's voters and
	// learners after a membership change (Voters, Learners).
	KeyVoters   Key = "voters"
	KeyLearners Key = "learners"
	// KeyLargestSet is the most replicas any queue of the metadata has,
	// as a membership change applied: the fewest members a leave must
	// keep.
	KeyLargestSet Key = "largest-set"

	// KeyKind carries a message or command kind (Kind).
	KeyKind Key = "kind"

	// KeyAttempt carries a recovery attempt's number, from 1 (Attempt).
	KeyAttempt Key = "attempt"

	// KeyWitnesses carries how many replicas witnessed a recovery's seal
	// (Witnesses).
	KeyWitnesses Key = "witnesses"

	// KeyBytes carries how many payload bytes a recovery copied (Bytes).
	KeyBytes Key = "bytes"

	// KeyRPCs carries how many requests a recovery sent (RPCs).
	KeyRPCs Key = "rpcs"

	// KeySyncs carries how many group commits a recovery's log made (Syncs).
	KeySyncs Key = "syncs"

	// KeyElapsed carries how long something took, in microseconds (Elapsed).
	KeyElapsed Key = "us"

	// KeyStage carries a recovery stage's name (Stage).
	KeyStage Key = "stage"

	// KeyOutcome carries how a recovery stage ended (Outcome).
	KeyOutcome Key = "outcome"

	// KeySource carries the node a recovery copies its history from
	// (Source).
	KeySource Key = "source"

	// KeySourceLast carries the last index of the recovery source's log
	// (SourceLast).
	KeySourceLast Key = "source-last"

	// KeySourceEpoch carries the epoch of the recovery source's last entry
	// (SourceEpoch).
	KeySourceEpoch Key = "source-epoch"

	// KeyMarker carries the index of a recovered epoch's marker entry
	// (Marker).
	KeyMarker Key = "marker"

	// KeyConfirmed carries the confirmed index a recovery knows of
	// (Confirmed).
	KeyConfirmed Key = "confirmed"

	// KeyBest carries the longest log a recovery's witnesses offer (Best).
	KeyBest Key = "best"

	// KeyBestNode carries the witness holding that log (BestNode).
	KeyBestNode Key = "best-node"

	// KeyDigest carries a log's digest, or the digest of a checkpoint's
	// state (Digest).
	KeyDigest Key = "digest"

	// KeyWitnessed carries the digest a recovery source's witness reported
	// (Witnessed).
	KeyWitnessed Key = "witnessed"

	// KeySilent carries how long a suspected peer has been silent, in
	// milliseconds (Silent).
	KeySilent Key = "silent-ms"

	// KeyWasConfirmed carries whether a peer heard from again had been
	// confirmed down (WasConfirmed).
	KeyWasConfirmed Key = "was-confirmed"

	// KeyFlaps carries how often lately a peer was confirmed down while
	// its process ran (Flaps).
	KeyFlaps Key = "flaps"

	// KeyMode carries a failure detection mode's number (Mode).
	KeyMode Key = "mode"

	// KeyInterval carries a detection policy's heartbeat interval
	// (Interval).
	KeyInterval Key = "interval"

	// KeyGrace carries a detection policy's grace period (Grace).
	KeyGrace Key = "grace"

	// KeyDir carries a directory's name (Dir).
	KeyDir Key = "name"

	// KeyQueues carries how many queue replicas a node opened (Queues).
	KeyQueues Key = "queues"

	// KeyCluster carries a cluster's name (Cluster).
	KeyCluster Key = "cluster"

	// KeyFree carries the free bytes of a node's disk, -1 when unknown
	// (Free).
	KeyFree Key = "free"

	// KeyPeer carries a peer node (Peer).
	KeyPeer Key = "peer"

	// KeySteps carries how many steps a piece of work was spread over
	// (Steps).
	KeySteps Key = "steps"

	// KeyBase carries where a rebuilt state began (Base): the state a
	// checkpoint build left in memory, the checkpoint decoded, or an
	// empty state.
	KeyBase Key = "base"

	// KeyDeliveries carries how many times a message went out (Deliveries).
	KeyDeliveries Key = "deliveries"

	// KeyLeases carries how many deliveries an owner had leased and not
	// yet seen settled or given back (Leases).
	KeyLeases Key = "leases"

	// KeyAdmitted carries how many publishes a recovered owner appended
	// while it outwaited an older owner's quorum (Admitted).
	KeyAdmitted Key = "admitted"

	// KeyConn carries a client connection's number on its node (Conn).
	KeyConn Key = "conn"

	// KeyQuiet carries how many times in a row a subscription's leases
	// ran out with no word from its connection (Quiet).
	KeyQuiet Key = "quiet"
)

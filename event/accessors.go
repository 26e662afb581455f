package event

import "time"

// The accessors read an event's attributes back by meaning, each with
// the type the constructors take. An accessor returns the zero value when
// the event has no such attribute, so a reader checks the name first.

// Queue returns the queue's name.
func (e Event) Queue() string { return e.text(KeyQueue) }

// Epoch returns the owner epoch the event names.
func (e Event) Epoch() uint64 { return e.unsigned(KeyEpoch) }

// Inc returns the queue incarnation.
func (e Event) Inc() uint64 { return e.unsigned(KeyInc) }

// Term returns the metadata term.
func (e Event) Term() uint64 { return e.unsigned(KeyTerm) }

// Node returns the node the event is about: the new leader, the suspected,
// confirmed, reset or recovered peer, the node marked down or up, or the
// follower that lost its log.
func (e Event) Node() uint32 { return e.nodeID(KeyNode) }

// Last returns the last index of the log the event describes.
func (e Event) Last() uint64 { return e.unsigned(KeyLast) }

// Index returns the log index the event reports.
func (e Event) Index() uint64 { return e.unsigned(KeyIndex) }

// After returns the index after which a replica dropped its log.
func (e Event) After() uint64 { return e.unsigned(KeyAfter) }

// Durable returns how much a replica or counter holds durably.
func (e Event) Durable() uint64 { return e.unsigned(KeyDurable) }

// Commit returns the metadata commit index a member caught up to.
func (e Event) Commit() uint64 { return e.unsigned(KeyCommit) }

// Counted returns the index through which the leader counted a follower that
// lost its log.
func (e Event) Counted() uint64 { return e.unsigned(KeyCounted) }

// Raised is how many delivery counts a recovered owner raised.
func (e Event) Raised() uint64 { return e.unsigned(KeyRaised) }

// TransferTo returns the node the leader hands leadership to, zero for none.
func (e Event) TransferTo() uint32 { return e.nodeID(KeyTransferTo) }

// Next returns the owner the metadata names next.
func (e Event) Next() uint32 { return e.nodeID(KeyNext) }

// Out returns the replica a planned replacement removes.
func (e Event) Out() uint32 { return e.nodeID(KeyOut) }

// In returns the node a planned replacement adds.
func (e Event) In() uint32 { return e.nodeID(KeyIn) }

// From returns where the event's subject came from, as rendered: a node
// ("n3", or "3" in meta.plan-recovery) or, in queue.role, the old role.
// FromNode reads a node as its ID.
func (e Event) From() string { return e.text(KeyFrom) }

// FromNode returns the node in the from attribute, in either rendering.
func (e Event) FromNode() uint32 { return e.nodeID(KeyFrom) }

// To returns where the event's subject goes, as rendered: a node or, in
// queue.role, the new role. ToNode reads a node as its ID.
func (e Event) To() string { return e.text(KeyTo) }

// ToNode returns the node in the to attribute.
func (e Event) ToNode() uint32 { return e.nodeID(KeyTo) }

// Why returns the explanation the event gives.
func (e Event) Why() string { return e.text(KeyWhy) }

// Err returns the message of the error the event reports.
func (e Event) Err() string { return e.text(KeyErr) }

// ID returns the message ID a delivery carried, as rendered.
func (e Event) ID() string { return e.text(KeyID) }

// Lease returns a delivery's lease.
func (e Event) Lease() uint64 { return e.unsigned(KeyLease) }

// Deliveries is how many times a message went out.
func (e Event) Deliveries() uint64 { return e.unsigned(KeyDeliveries) }

// Leases is how many deliveries an owner held leased.
func (e Event) Leases() int { return int(e.signed(KeyLeases)) }

// Admitted returns how many publishes a recovered owner appended while
// it outwaited an older owner's quorum.
func (e Event) Admitted() int { return int(e.signed(KeyAdmitted)) }

// Conn returns the client connection, numbered on its node, that a
// subscription event names.
func (e Event) Conn() uint64 { return e.unsigned(KeyConn) }

// Quiet returns how many times in a row a held-back subscription's
// leases ran out with no word from its connection.
func (e Event) Quiet() int { return int(e.signed(KeyQuiet)) }

// Members returns the members a recovered owner's activation, or a
// checkpoint certificate, names.
func (e Event) Members() []uint32 { return e.nodeList(KeyMembers) }

// Replicas returns the replica set after a replacement.
func (e Event) Replicas() []uint32 { return e.nodeList(KeyReplicas) }

// Voters returns the metadata group's voters after a membership change.
func (e Event) Voters() []uint32 { return e.nodeList(KeyVoters) }

// Learners returns the metadata group's learners after a membership
// change.
func (e Event) Learners() []uint32 { return e.nodeList(KeyLearners) }

// LargestSet returns the most replicas any queue had when a membership
// change applied.
func (e Event) LargestSet() int { return int(e.signed(KeyLargestSet)) }

// Kind returns the kind of an unexpected message or request by name, or a
// failed proposal's command kind by number.
func (e Event) Kind() string { return e.text(KeyKind) }

// Attempt returns a recovery attempt's number, from 1.
func (e Event) Attempt() int { return int(e.signed(KeyAttempt)) }

// Witnesses returns how many replicas witnessed a recovery's seal.
func (e Event) Witnesses() int { return int(e.signed(KeyWitnesses)) }

// Bytes returns how many payload bytes a recovery copied.
func (e Event) Bytes() int { return int(e.signed(KeyBytes)) }

// RPCs returns how many requests a recovery sent.
func (e Event) RPCs() int { return int(e.signed(KeyRPCs)) }

// Syncs returns how many group commits a recovery's log made.
func (e Event) Syncs() uint64 { return e.unsigned(KeySyncs) }

// Stage returns the recovery stage that ended.
func (e Event) Stage() string { return e.text(KeyStage) }

// Outcome returns how a recovery stage ended: ok or retry.
func (e Event) Outcome() string { return e.text(KeyOutcome) }

// Source returns the node a recovery copies its history from.
func (e Event) Source() uint32 { return e.nodeID(KeySource) }

// SourceLast returns the last index of the recovery source's log.
func (e Event) SourceLast() uint64 { return e.unsigned(KeySourceLast) }

// SourceEpoch returns the epoch of the recovery source's last entry.
func (e Event) SourceEpoch() uint64 { return e.unsigned(KeySourceEpoch) }

// Marker returns the index of a recovered epoch's marker entry.
func (e Event) Marker() uint64 { return e.unsigned(KeyMarker) }

// Confirmed returns the confirmed index an unsupported recovery knows of.
func (e Event) Confirmed() uint64 { return e.unsigned(KeyConfirmed) }

// Best returns the longest log an unsupported recovery's witnesses offer.
func (e Event) Best() uint64 { return e.unsigned(KeyBest) }

// BestNode returns the witness holding that log.
func (e Event) BestNode() uint32 { return e.nodeID(KeyBestNode) }

// Digest returns a log's digest, or a checkpoint state's, as rendered.
func (e Event) Digest() string { return e.text(KeyDigest) }

// Witnessed returns the digest a recovery source's witness reported.
func (e Event) Witnessed() string { return e.text(KeyWitnessed) }

// WasConfirmed returns whether a peer heard from again had been confirmed
// down.
func (e Event) WasConfirmed() bool { return e.boolean(KeyWasConfirmed) }

// Flaps returns how often lately a peer was confirmed down while its
// process ran.
func (e Event) Flaps() int { return int(e.signed(KeyFlaps)) }

// Mode returns the failure detection mode's number.
func (e Event) Mode() int { return int(e.signed(KeyMode)) }

// Interval returns a detection policy's heartbeat interval.
func (e Event) Interval() time.Duration { return e.duration(KeyInterval) }

// Grace returns a detection policy's grace period.
func (e Event) Grace() time.Duration { return e.duration(KeyGrace) }

// Dir returns the name of a stray directory.
func (e Event) Dir() string { return e.text(KeyDir) }

// Queues returns how many queue replicas a node opened.
func (e Event) Queues() int { return int(e.signed(KeyQueues)) }

// Cluster returns the cluster a node stamped its data directory with.
func (e Event) Cluster() string { return e.text(KeyCluster) }

// Peer returns the peer a counter node lost.
func (e Event) Peer() uint32 { return e.nodeID(KeyPeer) }

// Steps returns how many steps a rebuild was spread over.
func (e Event) Steps() uint64 { return e.unsigned(KeySteps) }

// Base returns where a rebuilt state began: "memory", "decoded" or
// "empty".
func (e Event) Base() string { return e.text(KeyBase) }

// Elapsed returns how long a recovery, or one of its stages, took. The
// events carry it in whole microseconds.
func (e Event) Elapsed() time.Duration { return time.Duration(e.signed(KeyElapsed)) * time.Microsecond }

// Silent returns how long a suspected peer had been silent. The event
// carries it in whole milliseconds.
func (e Event) Silent() time.Duration { return time.Duration(e.unsigned(KeySilent)) * time.Millisecond }

// Free returns the free bytes of a node's disk, -1 when unknown.
func (e Event) Free() int64 { return e.signed(KeyFree) }

// Package client is cairn's Go client: the sans-IO client logic of
// client/core, driven over real TCP connections.
//
// One goroutine owns the core. API calls, connection readers, dialers and
// a timer feed it inputs; it sends what the core wants sent and hands
// finished operations and deliveries back to their callers. The core
// decides everything that matters for correctness: where a request goes,
// when to follow a redirect, when to retry, and whether an operation that
// did not clearly succeed certainly failed or may have happened.
//
// # Outcomes
//
// Every operation ends in one of three ways. It succeeded (nil error). It
// certainly did not happen and never will: the error is a *StatusError
// carrying a Status. Or its outcome is unknown, because a
// request may have been acted on without the client hearing back (a
// timeout, a connection that broke with the request outstanding, a node
// that reported it was fenced): the error then wraps ErrUnknownOutcome. A
// connection that closes with requests outstanding makes them ambiguous at
// once; nothing waits for a timeout that cannot help.
//
// Publish waits for its outcome; PublishAsync starts a publish and
// returns at once, so a producer can keep many in flight. Publishes are
// sent in the order they are started, and a retried one keeps its message
// ID, so the queue holds it at most once.
//
// # Hedged requests
//
// A node that stops answering without its connections breaking (a
// paused process, a silent partition) would hold every request sent to
// it for the whole RequestTimeout, although its queues get a new owner
// within a fraction of a second. So once a publish or a subscribe has
// waited the hedge delay with no reply, the client
// sends the same request to another node too, without giving up on the
// first: whichever node confirms it first completes the operation. The
// other node serves the queue, or holds the request while the queue
// fails over and then sends it on, or names the owner, and a name the
// client is not already waiting on is followed at once. A node naming
// the silent one only means the next hedge, one hedge delay later. The
// delay adapts (Options.HedgeAfter): it follows how long this client's
// publishes take to be confirmed when nothing goes wrong, plus four
// deviations, held between 50ms and 200ms, so a client on a fast network
// leaves a silent owner sooner and one on a slow network does not hedge
// healthy requests. At
// most two attempts of an operation are in flight at once. A hedge is an
// attempt: MaxAttempts counts it (though a hedge never takes the last
// attempt allowed), and hedging ends with the operation's RetryFor. A
// hedged publish keeps its message ID, so the queue stores it once
// however many nodes were asked. Acks and nacks are never hedged, since
// a lease belongs to the one process that delivered the message; nor are
// queue creation and deletion, which the metadata answers and for which
// a second attempt would race the first. Outcomes stay honest: a hedged
// operation is reported failed only if no attempt may have acted.
//
// # Node identity and discovery
//
// Nodes are named by their uint32 IDs, because redirects name IDs. Dial
// connects to the given addresses in turn until one completes the
// handshake; the node's welcome carries its own ID and every node's ID and
// client address, and from then on the client dials the addresses the
// nodes advertise (the address that answered Dial is kept for its node).
// When no owner of a queue is known the core walks all nodes round-robin,
// so a dead node is skipped rather than retried forever. Connections are
// opened lazily, the first time a request goes to a node, and again after
// they break.
//
// # Authentication
//
// Set Options.TLS for mutual TLS, or Options.Secret for the cluster
// secret (development without TLS). The client proves its credentials and
// checks the node's before any request is sent.
//
// # Subscriptions
//
// Subscribe keeps a subscription standing across disconnects and owner
// changes, re-establishing it on its own. Each delivery is leased: Ack
// settles it for good, Nack returns it for redelivery, Extend keeps it
// leased for longer while a handler works on it, and a delivery left
// alone goes back to the queue when its lease expires. Stop ends the
// subscription at the node, which hands what it leased back at once,
// except the deliveries whose lease was extended: a handler may still be
// working on them, and they stay leased until settled or run out.
//
// A subscription whose leases run out with no word from it (no ack, nack
// or extension since they were handed out) is held back by its owner:
// one delivery at a time, with pauses of one to eight leases between
// them once that one runs out unanswered too, until the client next
// settles or extends something. So a consumer whose host died does not
// keep a window of messages waiting for it lease after lease, and a
// handler too slow for its lease gets less while the other consumers get
// the rest.
//
// A delivery's own methods go to the process that holds its lease. To
// settle a delivery elsewhere (a worker in another process, a gateway
// with several nodes behind it), pass its Ref along: AckRefs, NackRef
// and ExtendRef on any client send it to the queue's current owner,
// following the queue through a failover.
package client

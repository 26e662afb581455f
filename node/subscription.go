package node

import "time"

// subscription is one client connection's standing request for
// deliveries from one queue.
type subscription struct {
	conn ConnID
	// reqID is the subscribe request's ID: a later reply to it tells the
	// client its subscription ended here.
	reqID    uint64
	queue    string
	window   uint32
	leaseFor time.Duration
	leases   []*lease
	// heard is when the connection last spoke to this owner about the
	// queue's deliveries: its first subscribe, a settle, nack or
	// extension.
	heard time.Time
	// quiet counts the times in a row its leases ran out with no word
	// from the connection since they were handed out; above 0, the
	// subscription is held back (quiet.go) until resumeAt, then takes one
	// delivery at a time.
	quiet    int
	resumeAt time.Time
	// closed marks a subscription its connection ended while it held
	// extended leases: it takes no more deliveries and goes once the last
	// of them is settled, handed back or runs out (dropConnection).
	closed bool
}

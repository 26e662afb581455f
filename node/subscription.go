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
}

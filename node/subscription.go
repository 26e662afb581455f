package node

import "time"

// subscription is one client connection's standing request for
// deliveries from one queue.
type subscription struct {
	conn     ConnID
	queue    string
	window   uint32
	leaseFor time.Duration
	leases   []*lease
}

package status

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Target is a node to read the status of.
type Target struct {
	ID       uint32
	HTTPAddr string
}

// Reading is one node's status as a gatherer read it, or why it could
// not: Status is nil exactly when Err is set.
type Reading struct {
	Target
	Status *Node
	Err    error
	// Took is how long the read took, or how long it waited before
	// giving up.
	Took time.Duration
}

// FetchFunc reads one node's status.
type FetchFunc func(ctx context.Context, t Target) (*Node, error)

// HTTPFetch returns a FetchFunc that reads /status over HTTP, proving
// itself with a.
func HTTPFetch(a Auth) FetchFunc {
	return func(ctx context.Context, t Target) (*Node, error) {
		if t.HTTPAddr == "" {
			return nil, ErrNoHTTPAddr
		}
		return FetchAuth(ctx, t.HTTPAddr, a)
	}
}

// ErrNoHTTPAddr stands for a node whose status cannot be asked for,
// because the cluster names no HTTP address for it.
var ErrNoHTTPAddr = errors.New("the cluster names no HTTP address for this node")

// Gather reads every target's status at once, each read bounded by
// wait, and returns the readings in the targets' order. A node that is
// down, slow or refuses costs at most wait, and only its own reading.
func Gather(ctx context.Context, targets []Target, fetch FetchFunc, wait time.Duration) []Reading {
	out := make([]Reading, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		out[i].Target = t
		wg.Go(func() {
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			s, err := fetch(rctx, t)
			out[i].Took = time.Since(start)
			if err != nil {
				if rctx.Err() != nil && ctx.Err() == nil {
					err = fmt.Errorf("no answer within %v: %w", wait, err)
				}
				s = nil
			} else if s == nil {
				err = errors.New("the node returned no status")
			}
			out[i].Status, out[i].Err = s, err
		})
	}
	wg.Wait()
	return out
}

// ReachState names in one word why a node's status could not be read:
// "down" when its HTTP port refused the connection (nothing listens
// there), "unreachable" when the connection failed otherwise or timed
// out, "unknown" when the cluster gave no address to ask, and "error"
// when the node answered but not with its status (an HTTP error, such as
// a refused credential, or a document that does not decode). It returns
// "" for a nil error.
func ReachState(err error) string {
	var netErr *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrNoHTTPAddr):
		return "unknown"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "down"
	case errors.As(err, &netErr), errors.Is(err, context.DeadlineExceeded):
		return "unreachable"
	}
	return "error"
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// A cooperative handoff moves a queue to another of its replicas while
// its owner serves (see client.MoveOwner). The CLI sends the request,
// which the owner answers once the metadata names the new owner, and
// then watches the new owner's own status until it serves the queue:
// only then do publishers and consumers reach it, so only then is the
// move done from an operator's point of view.

// handoffDrainDefault is the node's drain bound when a request names
// none; the CLI needs it to size its own waits.
const handoffDrainDefault = 5 * time.Second

// serveWait bounds how long the CLI watches for the new owner to serve
// after the metadata named it: its recovery takes a few round trips.
const serveWait = 10 * time.Second

// servePoll is how often the new owner's status is read meanwhile.
const servePoll = 25 * time.Millisecond

// handoffSlack is what a move may take beyond its drain bound: closing,
// the metadata's commit, and the new owner's recovery.
const handoffSlack = 15 * time.Second

// handoffSession is an admin connection that moves queues, with the
// credential its status reads need.
type handoffSession struct {
	cl    *client.Client
	auth  status.Auth
	drain time.Duration
	// budget bounds one move, from the request to the new owner serving.
	budget time.Duration
}

// parseNodeID reads a node ID written as 2 or n2.
func parseNodeID(s string) (uint32, error) {
	id, err := strconv.ParseUint(strings.TrimPrefix(s, "n"), 10, 32)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a node ID: want a number above 0, such as 2 or n2", s)
	}
	return uint32(id), nil
}

// openHandoff connects in the admin role, which a handoff needs, with a
// request timeout and a budget that fit the drain bound: a request the
// owner answers only after draining must not be given up on before.
func openHandoff(c *conn, e env, drain time.Duration) (*handoffSession, int) {
	c.admin = true
	effective := drain
	if effective == 0 {
		effective = handoffDrainDefault
	}
	c.timeout = max(c.timeout, effective+handoffSlack)
	auth, err := c.statusAuth()
	if err != nil {
		return nil, failure(e, "loading the TLS files", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dialWith(ctx, func(o *client.Options) { o.RequestTimeout = effective + 5*time.Second })
	if err != nil {
		return nil, failure(e, "connecting", err)
	}
	return &handoffSession{cl: cl, auth: auth, drain: drain, budget: c.timeout}, exitOK
}

// node finds a member of the cluster by ID.
func (s *handoffSession) node(id uint32) (client.NodeInfo, error) {
	var names []string
	for _, n := range s.cl.Nodes() {
		if n.ID == id {
			return n, nil
		}
		names = append(names, fmt.Sprintf("n%d", n.ID))
	}
	return client.NodeInfo{}, fmt.Errorf("the cluster has no node n%d; its nodes are %s", id, strings.Join(names, ", "))
}

// moved is a handoff the CLI saw through: the epoch the new owner serves
// and how long it took, from the request to the first status that
// showed it serving.
type moved struct {
	epoch   uint64
	took    time.Duration
	already bool
}

// move hands queue to node to and waits until to serves it.
func (s *handoffSession) move(queue string, to client.NodeInfo) (moved, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.budget)
	defer cancel()
	// The new owner must be seen serving, so a node whose status cannot
	// be read is refused before anything is asked of the owner.
	before, err := readNode(ctx, to, s.auth)
	if err != nil {
		return moved{}, err
	}
	if q, ok := servedQueue(before, queue); ok {
		return moved{epoch: q.Epoch, already: true}, nil
	}
	start := time.Now()
	err = s.cl.MoveOwner(ctx, queue, to.ID, s.drain)
	if err != nil && !errors.Is(err, client.ErrUnknownOutcome) {
		return moved{}, err
	}
	// An unknown outcome may still be a move that happened (its reply
	// was lost, or a retry met the handoff under way), so the status
	// decides; it is read once more with a short bound of its own.
	parent := ctx
	if err != nil {
		parent = context.Background()
	}
	wctx, wcancel := context.WithTimeout(parent, serveWait)
	defer wcancel()
	epoch, werr := waitServing(wctx, to, s.auth, queue, err == nil)
	if werr != nil {
		if err != nil {
			return moved{}, fmt.Errorf("%w; afterwards %v", err, werr)
		}
		return moved{}, werr
	}
	return moved{epoch: epoch, took: time.Since(start)}, nil
}

// readNode reads node n's status, or says why it cannot be read.
func readNode(ctx context.Context, n client.NodeInfo, auth status.Auth) (*status.Node, error) {
	rctx, cancel := context.WithTimeout(ctx, nodeReadWait)
	defer cancel()
	s, err := status.HTTPFetch(auth)(rctx, status.Target{ID: n.ID, HTTPAddr: n.HTTPAddr})
	if err != nil {
		return nil, fmt.Errorf("n%d's status cannot be read, so its serving the queue could not be seen (n%d is %s: %w)",
			n.ID, n.ID, reachState(err), err)
	}
	return s, nil
}

// servedQueue returns queue as node s reports it, and whether s serves
// it as the owner the metadata names.
func servedQueue(s *status.Node, queue string) (status.Queue, bool) {
	for _, q := range s.Queues {
		if q.Name == queue {
			return q, q.Active && q.Role == "owner" && q.Owner == s.ID
		}
	}
	return status.Queue{}, false
}

// waitServing reads to's status until it serves queue, and returns the
// epoch it serves. With again false it reads once.
func waitServing(ctx context.Context, to client.NodeInfo, auth status.Auth, queue string, again bool) (uint64, error) {
	last := "it does not report the queue"
	for {
		s, err := readNode(ctx, to, auth)
		if err == nil {
			q, ok := servedQueue(s, queue)
			if ok {
				return q.Epoch, nil
			}
			if q.Name != "" {
				last = fmt.Sprintf("it reports the queue %s, owner n%d in epoch %d, its role %s", q.State, q.Owner, q.Epoch, q.Role)
			}
		} else {
			last = err.Error()
		}
		if !again {
			return 0, fmt.Errorf("n%d does not serve queue %s: %s", to.ID, queue, last)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("n%d was named the owner of queue %s but did not serve it within %v: %s", to.ID, queue, serveWait, last)
		case <-time.After(servePoll):
		}
	}
}

// printMoved prints the line a successful move earns.
func printMoved(w io.Writer, queue string, to uint32, m moved) {
	if m.already {
		fmt.Fprintf(w, "queue %s is owned by n%d already (epoch %d)\n", queue, to, m.epoch)
		return
	}
	fmt.Fprintf(w, "moved queue %s to n%d (epoch %d) in %v\n", queue, to, m.epoch, m.took.Round(time.Millisecond))
}

const moveOwnerUsage = "usage: cairn queue move-owner NAME --to N [--drain DURATION]"

// queueMoveOwner hands one queue to another of its replicas.
func queueMoveOwner(args []string, e env) int {
	fs, c := newFlags("queue move-owner", e)
	toFlag := fs.String("to", "", "the node to hand the queue to (2 or n2); it must hold a replica")
	drain := fs.Duration("drain", 0, "how long the owner waits for consumers to settle what they hold (0: the node's default, 5s)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(e.stderr, moveOwnerUsage)
		return exitUsage
	}
	if *toFlag == "" {
		fmt.Fprintf(e.stderr, "cairn: queue move-owner needs --to N, the node to hand the queue to\n%s\n", moveOwnerUsage)
		return exitUsage
	}
	to, err := parseNodeID(*toFlag)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: --to: %v\n", err)
		return exitUsage
	}
	if code, ok := checkDrain(e, *drain); !ok {
		return code
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	s, code := openHandoff(c, e, *drain)
	if s == nil {
		return code
	}
	defer s.cl.Close()
	target, err := s.node(to)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: --to: %v\n", err)
		return exitUsage
	}
	m, err := s.move(pos[0], target)
	if err != nil {
		return failure(e, fmt.Sprintf("moving queue %s to n%d", pos[0], to), err)
	}
	printMoved(e.stdout, pos[0], to, m)
	return exitOK
}

// checkDrain refuses a negative drain bound before anything is sent.
func checkDrain(e env, d time.Duration) (int, bool) {
	if d < 0 {
		fmt.Fprintf(e.stderr, "cairn: --drain %v is negative; give 0 for the node's default (%v) or a bound up to 5m\n", d, handoffDrainDefault)
		return exitUsage, false
	}
	return exitOK, true
}

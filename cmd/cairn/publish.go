package main

import (
	"bufio"
	"context"
	"fmt"
	"iter"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/node/wire"
)

// publishWindow bounds the publishes in flight when reading stdin, so a
// long input streams at the cluster's pace with bounded memory.
const publishWindow = 64

func publish(args []string, e env) int {
	fs, c := newFlags("publish", e)
	delay := fs.Duration("delay", 0, "make the messages deliverable only after this long")
	pos, err := parse(fs, args)
	if err != nil || len(pos) < 1 {
		fmt.Fprintln(e.stderr, "usage: cairn publish QUEUE [MSG...] [--delay D]  (stdin lines when no MSG)")
		return exitUsage
	}
	queue, msgs := pos[0], messages(pos[1:], e)
	ctx, cancel := c.context()
	cl, err := c.dial(ctx)
	cancel()
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	// Publishes are started in input order with up to publishWindow in
	// flight. The first one completes before any other starts: it teaches
	// the client which node owns the queue, so the rest travel on one
	// connection to it and are queued in input order (a publish that has
	// to be retried can still land later than its successors).
	type pending struct {
		p      *client.Publishing
		cancel context.CancelFunc
	}
	worst := exitOK
	var inflight []pending
	report := func(p pending) {
		id, err := p.p.Wait()
		p.cancel()
		if err != nil {
			worst = max(worst, failure(e, "publishing", err))
			return
		}
		fmt.Fprintln(e.stdout, id)
	}
	first := true
	for msg := range msgs {
		if len(inflight) == publishWindow || (len(inflight) == 1 && first) {
			first = false
			report(inflight[0])
			inflight = inflight[1:]
		}
		ctx, cancel := c.context()
		inflight = append(inflight, pending{cl.PublishAsync(ctx, queue, msg, client.WithDelay(*delay)), cancel})
	}
	for _, p := range inflight {
		report(p)
	}
	return worst
}

// messages yields the messages given as arguments, or else stdin's lines.
func messages(args []string, e env) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if len(args) > 0 {
			for _, a := range args {
				if !yield([]byte(a)) {
					return
				}
			}
			return
		}
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 64<<10), wire.MaxPayloadSize+1)
		for sc.Scan() {
			if !yield([]byte(sc.Text())) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(e.stderr, "cairn: reading stdin:", err)
		}
	}
}

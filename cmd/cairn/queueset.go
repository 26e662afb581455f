package main

import (
	"fmt"

	"github.com/cairnmq/cairn/client"
)

// queueSet changes an existing queue's delivery limit: "cairn queue set
// NAME --dead-letter Q --max-deliveries N" gives it one or replaces the
// one it has, "--no-dead-letter" removes it. A message already on its
// way to the old dead-letter queue still arrives there.
func queueSet(args []string, e env) int {
	fs, c := newFlags("queue set", e)
	dead := fs.String("dead-letter", "", "the queue a message moves to once it was delivered --max-deliveries times without an ack")
	limit := fs.Int("max-deliveries", 0, "the delivery limit, with --dead-letter (1 to 1000)")
	none := fs.Bool("no-dead-letter", false, "remove the queue's delivery limit: messages are offered again however often they were delivered")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: cairn queue set NAME (--dead-letter QUEUE --max-deliveries N | --no-dead-letter)")
		return exitUsage
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	switch {
	case *none && (*dead != "" || *limit != 0):
		fmt.Fprintln(e.stderr, "cairn: --no-dead-letter removes the delivery limit; it takes neither --dead-letter nor --max-deliveries")
		return exitUsage
	case !*none && (*dead == "" || *limit < 1 || *limit > client.MaxDeliveriesLimit):
		fmt.Fprintf(e.stderr, "cairn: give --dead-letter and --max-deliveries together, with a limit from 1 to %d, or --no-dead-letter\n", client.MaxDeliveriesLimit)
		return exitUsage
	}
	if *dead != "" {
		if code, ok := checkQueueName(e, *dead); !ok {
			return code
		}
	}
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	if err := cl.SetDeadLetter(ctx, pos[0], *dead, *limit); err != nil {
		return failure(e, "setting "+pos[0]+"'s delivery limit", err)
	}
	if *none {
		fmt.Fprintf(e.stdout, "queue %s has no delivery limit now\n", pos[0])
	} else {
		fmt.Fprintf(e.stdout, "queue %s moves a message to %s after %d deliveries now\n", pos[0], *dead, *limit)
	}
	return exitOK
}

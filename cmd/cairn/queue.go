package main

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/node"
)

// checkQueueName refuses a queue name the nodes would refuse, with the
// rule it breaks, before anything is sent. The node checks names with the
// same function and explains a refusal in its reply too, but the client
// refuses an empty or overlong name itself without a reason, and a name
// checked here fails before the command waits for a connection.
func checkQueueName(e env, name string) (int, bool) {
	if err := node.ValidQueueName(name); err != nil {
		fmt.Fprintf(e.stderr, "cairn: %v\n", err)
		return exitUsage, false
	}
	return exitOK, true
}

func queueCreate(args []string, e env) int {
	fs, c := newFlags("queue create", e)
	policy := fs.String("policy", "majority", "confirmation policy: majority, all or owner-only")
	window := fs.Duration("dedup-window", 0, "how long the queue remembers a message ID, so that a retried publish is stored once (1s to 24h; default the nodes')")
	dead := fs.String("dead-letter", "", "the queue a message moves to once it was delivered --max-deliveries times without an ack (create it first)")
	limit := fs.Int("max-deliveries", 0, "the delivery limit, with --dead-letter (1 to 1000)")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(e.stderr, "usage: cairn queue create NAME [--policy majority|all|owner-only] [--dedup-window D] [--dead-letter QUEUE --max-deliveries N]")
		return exitUsage
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	p, err := client.ParsePolicy(*policy)
	if err != nil {
		fmt.Fprintf(e.stderr, "cairn: --policy: %v\n", err)
		return exitUsage
	}
	if *window != 0 && (*window < client.MinDedupWindow || *window > client.MaxDedupWindow) {
		fmt.Fprintf(e.stderr, "cairn: --dedup-window %v is outside [%v, %v]\n", *window, client.MinDedupWindow, client.MaxDedupWindow)
		return exitUsage
	}
	if (*dead == "") != (*limit == 0) || *limit < 0 || *limit > client.MaxDeliveriesLimit {
		fmt.Fprintf(e.stderr, "cairn: --dead-letter and --max-deliveries go together, with a limit from 1 to %d\n", client.MaxDeliveriesLimit)
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
	var opts []client.CreateOption
	if *window != 0 {
		opts = append(opts, client.WithDedupWindow(*window))
	}
	if *dead != "" {
		opts = append(opts, client.WithDeadLetter(*dead, *limit))
	}
	if err := cl.CreateQueue(ctx, pos[0], p, opts...); err != nil {
		return failure(e, "creating "+pos[0], err)
	}
	fmt.Fprintf(e.stdout, "created queue %s (policy %s, %s%s)\n", pos[0], p, windowText(*window), deadLetterText(*dead, *limit))
	return exitOK
}

// deadLetterText describes a queue's delivery limit, if it has one.
func deadLetterText(dead string, limit int) string {
	if dead == "" {
		return ""
	}
	return fmt.Sprintf(", to %s after %d deliveries", dead, limit)
}

// windowText describes the deduplication window a queue was created
// with.
func windowText(d time.Duration) string {
	if d == 0 {
		return "the nodes' default deduplication window"
	}
	return "deduplication window " + d.String()
}

func queueDelete(args []string, e env) int {
	return queueOneName(args, e, "delete", "deleting", func(ctx context.Context, cl *client.Client, q string) (string, error) {
		return "deleted queue " + q, cl.DeleteQueue(ctx, q)
	})
}

// queuePurge removes every message a queue holds, as its delete does, but
// keeps the queue. Like delete it asks for no confirmation: a script that
// purges means it.
func queuePurge(args []string, e env) int {
	return queueOneName(args, e, "purge", "purging", func(ctx context.Context, cl *client.Client, q string) (string, error) {
		return "purged queue " + q + ": every message it held is gone", cl.Purge(ctx, q)
	})
}

// queueOneName runs "cairn queue VERB NAME": it checks the name, dials,
// does what act does, and prints what act says once it succeeded.
func queueOneName(args []string, e env, verb, doing string, act func(context.Context, *client.Client, string) (string, error)) int {
	fs, c := newFlags("queue "+verb, e)
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintf(e.stderr, "usage: cairn queue %s NAME\n", verb)
		return exitUsage
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	done, err := act(ctx, cl, pos[0])
	if err != nil {
		return failure(e, doing+" "+pos[0], err)
	}
	fmt.Fprintln(e.stdout, done)
	return exitOK
}

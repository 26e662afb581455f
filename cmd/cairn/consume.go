package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cairnmq/cairn/client"
)

// fetchRound bounds how long one fetch of a counted consume waits for
// more messages before it prints what it has.
const fetchRound = 200 * time.Millisecond

func consume(args []string, e env) int {
	fs, c := newFlags("consume", e)
	ack := fs.Bool("ack", false, "ack each message after printing it (otherwise it is redelivered once its lease lapses or the command exits)")
	count := fs.Int("count", 0, "stop after this many messages (0: until interrupted or --timeout)")
	window := fs.Uint("window", 64, "deliveries unsettled at once")
	lease := fs.Duration("lease", 30*time.Second, "how long a delivery is leased before redelivery")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 || *count < 0 || *window == 0 || *window > 1<<31 || *lease <= 0 {
		fmt.Fprintln(e.stderr, "usage: cairn consume QUEUE [--ack] [--count N] [--timeout D] [--window W] [--lease D]")
		return exitUsage
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if flagSet(fs, "timeout") {
		// Only an explicit --timeout bounds a consume: by default it runs
		// until interrupted or --count is reached.
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cl, err := c.dial(dctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	p := &printer{e: e, ack: *ack, timeout: c.timeout}
	if *count > 0 {
		return p.fetch(ctx, cl, pos[0], *count, int(*window), *lease)
	}
	_, err = cl.Subscribe(ctx, pos[0], p.handle, client.WithWindow(uint32(*window)), client.WithLease(*lease))
	if err != nil {
		return failure(e, "subscribing to "+pos[0], err)
	}
	<-ctx.Done()
	return p.status()
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printer prints deliveries and, if asked, acks them.
type printer struct {
	e       env
	ack     bool
	timeout time.Duration

	mu    sync.Mutex
	seen  int
	worst int
}

// fetch consumes count messages from queue by fetching them, at most
// window at a time, so the node never sends more than count, and returns
// the exit status: exitShort (after saying how many were consumed) if
// ctx ended first.
func (p *printer) fetch(ctx context.Context, cl *client.Client, queue string, count, window int, lease time.Duration) int {
	for p.seen < count {
		ds, err := cl.Fetch(ctx, queue, min(count-p.seen, window), fetchRound, client.WithLease(lease))
		for _, d := range ds {
			p.handle(ctx, d)
		}
		if err == nil {
			continue
		}
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return max(p.status(), failure(p.e, "fetching from "+queue, err))
		}
		fmt.Fprintf(p.e.stderr, "cairn: consumed %d of %d message(s) before %s\n", p.seen, count, ended(ctx))
		return max(p.status(), exitShort)
	}
	return p.status()
}

// ended says why ctx ended: the timeout or an interrupt.
func ended(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "the timeout"
	}
	return "being interrupted"
}

func (p *printer) handle(ctx context.Context, d *client.Delivery) {
	p.mu.Lock()
	p.seen++
	p.mu.Unlock()
	fmt.Fprintf(p.e.stdout, "%s\tattempt=%d\t%s\n", d.ID, d.Attempt, bytes.TrimRight(d.Payload, "\n"))
	if p.ack {
		// The CLI waits for each settle: it reports every ack that failed,
		// and a message it printed as consumed is settled when it exits.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
		err := d.AckSync(actx)
		cancel()
		if err != nil {
			p.mu.Lock()
			p.worst = max(p.worst, failure(p.e, "acking "+d.ID.String(), err))
			p.mu.Unlock()
		}
	}
}

func (p *printer) status() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.worst
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cairnmq/cairn/client"
)

func consume(args []string, e env) int {
	fs, c := newFlags("consume", e)
	ack := fs.Bool("ack", false, "ack each message after printing it (otherwise it is redelivered once its lease lapses)")
	count := fs.Int("count", 0, "stop after this many messages (0: until interrupted)")
	window := fs.Uint("window", 64, "deliveries unsettled at once")
	lease := fs.Duration("lease", 30*time.Second, "how long a delivery is leased before redelivery")
	pos, err := parse(fs, args)
	if err != nil || len(pos) != 1 || *count < 0 || *window == 0 || *lease <= 0 {
		fmt.Fprintln(e.stderr, "usage: cairn consume QUEUE [--ack] [--count N] [--window W] [--lease D]")
		return exitUsage
	}
	if code, ok := checkQueueName(e, pos[0]); !ok {
		return code
	}
	if *count > 0 {
		*window = min(*window, uint(*count))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cl, err := c.dial(dctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	ctx, finish := context.WithCancel(ctx)
	defer finish()
	p := &printer{e: e, ack: *ack, limit: *count, timeout: c.timeout, finish: finish}
	_, err = cl.Subscribe(ctx, pos[0], p.handle, client.WithWindow(uint32(*window)), client.WithLease(*lease))
	if err != nil {
		return failure(e, "subscribing to "+pos[0], err)
	}
	<-ctx.Done()
	return p.status()
}

// printer prints deliveries and, if asked, acks them.
type printer struct {
	e       env
	ack     bool
	limit   int
	timeout time.Duration
	finish  context.CancelFunc

	mu    sync.Mutex
	seen  int
	worst int
}

func (p *printer) handle(ctx context.Context, d *client.Delivery) {
	p.mu.Lock()
	if p.limit > 0 && p.seen >= p.limit {
		p.mu.Unlock()
		return // beyond --count: left to lapse back into the queue
	}
	p.seen++
	last := p.limit > 0 && p.seen == p.limit
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
	if last {
		p.finish()
	}
}

func (p *printer) status() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.worst
}

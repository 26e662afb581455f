package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/wire"
)

// publishWindow bounds the publishes in flight when reading stdin, so a
// long input streams at the cluster's pace with bounded memory.
const publishWindow = 64

func publish(args []string, e env) int {
	fs, c := newFlags("publish", e)
	delay := fs.Duration("delay", 0, "make the messages deliverable only after this long")
	fromFile := fs.String("from-file", "", "publish each line of this file, as stdin's lines would be")
	pos, err := parse(fs, args)
	if err != nil || len(pos) < 1 || (*fromFile != "" && len(pos) > 1) {
		fmt.Fprintln(e.stderr, "usage: cairn publish QUEUE [MSG...] [--delay D] [--from-file F]  (stdin lines when no MSG)")
		return exitUsage
	}
	queue := pos[0]
	if code, ok := checkQueueName(e, queue); !ok {
		return code
	}
	if *delay < 0 {
		fmt.Fprintf(e.stderr, "cairn: --delay %v is negative: a message's delay is zero or more\n", *delay)
		return exitUsage
	}
	input, source := e.stdin, "stdin"
	if *fromFile != "" {
		f, err := os.Open(*fromFile)
		if err != nil {
			fmt.Fprintf(e.stderr, "cairn: %v\n", err)
			return exitFailed
		}
		defer f.Close()
		input, source = f, *fromFile
	}
	ctx, cancel := c.context()
	cl, err := c.dial(ctx)
	cancel()
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	p := &publisher{e: e, c: c, cl: cl, queue: queue, source: source, opts: []client.PublishOption{client.WithDelay(*delay)}}
	if len(pos) > 1 {
		for _, msg := range pos[1:] {
			p.start([]byte(msg))
		}
		p.drain()
		return p.worst
	}
	lines := newLineReader(input, wire.MaxPayloadSize)
	for {
		msg, err := lines.next()
		if err != nil {
			p.drain()
			return p.stopped(lines, err)
		}
		p.start(msg)
	}
}

// stopped reports why reading stdin ended and returns the exit status.
// The end of the input is the normal end; anything else stopped the
// command before the line that caused it, so the report says how many of
// the lines before it were published and that none after it were.
func (p *publisher) stopped(lines *lineReader, err error) int {
	if errors.Is(err, io.EOF) {
		return p.worst
	}
	n := lines.line
	if errors.Is(err, errLineTooLong) {
		fmt.Fprintf(p.e.stderr, "cairn: %s line %d is longer than the %d-byte (%s) limit on a message\n",
			p.source, n, lines.limit, sizeText(lines.limit))
	} else {
		fmt.Fprintf(p.e.stderr, "cairn: reading %s at line %d: %v\n", p.source, n, err)
	}
	if p.confirmed == n-1 {
		fmt.Fprintf(p.e.stderr, "cairn: published the %d line(s) before it; nothing from line %d on was published\n", n-1, n)
	} else {
		fmt.Fprintf(p.e.stderr, "cairn: published %d of the %d line(s) before it (the errors above say which failed); nothing from line %d on was published\n",
			p.confirmed, n-1, n)
	}
	return max(p.worst, exitFailed)
}

// publisher starts publishes in input order with up to publishWindow in
// flight. The first one completes before any other starts: it teaches
// the client which node owns the queue, so the rest travel on one
// connection to it and are queued in input order (a publish that has to
// be retried can still land later than its successors).
type publisher struct {
	e     env
	c     *conn
	cl    *client.Client
	queue string
	// source names the input lines come from, stdin or a file.
	source string
	opts   []client.PublishOption

	inflight  []pendingPublish
	started   int
	confirmed int
	worst     int
}

// pendingPublish is one publish in flight and the end of its deadline.
type pendingPublish struct {
	p      *client.Publishing
	cancel context.CancelFunc
}

// start begins publishing msg, first waiting for the oldest publish if
// the window is full (or if the first publish has not finished).
func (p *publisher) start(msg []byte) {
	if len(p.inflight) == publishWindow || (p.started == 1 && len(p.inflight) == 1) {
		p.report(p.inflight[0])
		p.inflight = p.inflight[1:]
	}
	ctx, cancel := p.c.context()
	p.inflight = append(p.inflight, pendingPublish{p.cl.PublishAsync(ctx, p.queue, msg, p.opts...), cancel})
	p.started++
}

// drain waits for every publish in flight.
func (p *publisher) drain() {
	for _, pp := range p.inflight {
		p.report(pp)
	}
	p.inflight = nil
}

// report waits for one publish and prints its message ID or its error.
func (p *publisher) report(pp pendingPublish) {
	id, err := pp.p.Wait()
	pp.cancel()
	if err != nil {
		p.worst = max(p.worst, failure(p.e, "publishing", err))
		return
	}
	p.confirmed++
	fmt.Fprintln(p.e.stdout, id)
}

// lineReader splits stdin into messages, one a line, and refuses a line
// longer than a message may be instead of cutting it or skipping it.
type lineReader struct {
	r     *bufio.Reader
	limit int
	line  int // the number of the line next returned, or that failed
}

func newLineReader(r io.Reader, limit int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), limit: limit}
}

// errLineTooLong reports a line over the limit.
var errLineTooLong = errors.New("line too long")

// next returns the next line without its line ending ("\n" or "\r\n"),
// or io.EOF at the end of the input. A line longer than the limit is
// errLineTooLong, never cut or skipped; after it, or after a read error,
// the reader is done. A last line without a newline is still a line.
func (lr *lineReader) next() ([]byte, error) {
	lr.line++
	var msg []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		msg = append(msg, chunk...)
		// A line ending is at most two bytes ("\r\n"), so a longer
		// partial line is already over the limit.
		if len(msg) > lr.limit+2 {
			return nil, errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(msg) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, err
		}
		if msg = trimEOL(msg); len(msg) > lr.limit {
			return nil, errLineTooLong
		}
		return msg, nil
	}
}

// trimEOL removes a trailing "\n", then a trailing "\r", as
// bufio.ScanLines does (the last line may end in "\r" alone).
func trimEOL(b []byte) []byte {
	b, _ = bytes.CutSuffix(b, []byte("\n"))
	b, _ = bytes.CutSuffix(b, []byte("\r"))
	return b
}

// sizeText writes a byte count in the largest binary unit that divides
// it, for error messages ("1 MiB").
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

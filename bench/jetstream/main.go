// Command jetstream is cairn-bench's peer harness for NATS JetStream: it
// runs the drain and failover benchmarks' workloads on three-node
// JetStream clusters so that cairn's figures can be read as ratios of a
// well-known system's on the same machine.
//
// Its clusters are three nats-server processes on 127.0.0.1, each with
// file storage and every write synced (as cairn syncs). It answers one
// command per line of standard input with one JSON line on standard
// output:
//
//	drain <messages> <payload bytes> <async|sync>
//	{"handled_seconds": 1.23, "settled_seconds": 1.25}   or   {"error": "..."}
//
//	failover <backlog messages> <payload bytes> [<timeout seconds>]
//	{"first_publish_seconds": 4.1, "first_delivery_seconds": 4.2}   or   {"error": "..."}
//
//	publish <window seconds> <warmup seconds> <in flight> <payload bytes>
//	{"confirmed_per_second": 31000, "latency_p50_seconds": 0.008, ...}   or   {"error": "..."}
//
//	create <streams> <concurrency>
//	{"created_per_second": 85.2, "create_p50_seconds": 0.18, ...}   or   {"error": "..."}
//
// Drains and publish windows share one cluster, started at the first of
// them; each failover and each create run starts a fresh cluster and
// stops it before answering. cairn-bench starts the harness with "cairn-bench drain
// --peer CMD", "cairn-bench failover --peer CMD" or "cairn-bench
// throughput --peer CMD". At the end of its input, or on SIGINT or
// SIGTERM, it stops its servers, removes its files and exits 0.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cairnmq/cairn/bench/protocol"
)

// prog names the harness in its diagnostics, whatever its binary is called,
// so that lines it writes among cairn-bench's own are easy to tell apart.
const prog = "jetstream-peer"

// Exit codes: a harness that could not start its cluster is told apart
// from one that was started with bad flags.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// readyTimeout bounds the wait for a new cluster to elect a JetStream
// meta leader and accept a replicated stream; three servers on loopback
// normally need a few seconds.
const readyTimeout = 30 * time.Second

// usageText is printed by -h and after a flag error.
const usageText = `usage: %s [--nats-server PATH] [--keep]

A peer harness for "cairn-bench drain", "failover", "throughput" and "queues": it runs
their workloads on NATS JetStream, so that cairn's figures can be compared
with those of another replicated, fsyncing broker on the same machine. It is
not meant to be run alone, but it can be, by typing commands.

Its clusters are three nats-server processes on 127.0.0.1 (file storage,
sync_interval: always). It reads one command a line on standard input and
answers each with one JSON line on standard output:

  drain <messages> <payload bytes> <async|sync>
      publishes the messages to a fresh three-replica stream (256 in flight),
      then times one consumer whose handler acks each message before it
      returns (async: Ack, sync: DoubleAck), and answers
      {"handled_seconds": S, "settled_seconds": S} or {"error": "..."};
      the drains share one cluster, started at the first drain

  failover <backlog messages> <payload bytes> [<timeout seconds>]
      starts a fresh cluster, publishes the backlog to a three-replica
      stream, SIGKILLs the stream's leader, and measures from the kill the
      first newly acknowledged publish and the first delivery to a consumer
      created after the kill (each within the timeout, 30 s by default);
      answers {"first_publish_seconds": S, "first_delivery_seconds": S} or
      {"error": "..."}, and stops the cluster

  publish <window seconds> <warmup seconds> <in flight> <payload bytes>
      on the drains' cluster, creates a fresh three-replica stream with a
      consumer that acks every message, publishes for the window with that
      many publishes awaiting their acknowledgement at once, and answers
      {"confirmed_per_second": R, "latency_p50_seconds": S,
      "latency_p99_seconds": S, "latency_max_seconds": S, "confirmed": N,
      "failed": N, "lost": N}: the rate counts acknowledgements after the
      warmup, the latencies are of publishes started after it, and lost
      counts acknowledged messages the consumer never received

  create <streams> <concurrency>
      starts a fresh cluster and creates that many three-replica file
      streams with that many creators at once, each waiting for its create
      before the next, and answers {"created_per_second": R,
      "create_p50_seconds": S, "create_p95_seconds": S,
      "create_max_seconds": S, "created": N}; it stops the cluster before
      answering

At the end of its input, or on SIGINT or SIGTERM, it stops its servers,
removes its temporary directory and exits 0. Diagnostics go to standard
error; each server logs to a file in the temporary directory.

Typical use: cairn-bench drain --peer "%s --nats-server PATH/nats-server"

flags:
`

// main runs the harness and exits with the code run returns.
func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the harness's flags.
type options struct {
	serverBin string
	keep      bool
}

// run is the whole program; it returns the exit code rather than exiting,
// so that its deferred clean-ups (stopping the servers, removing the
// temporary directory) always run.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	// A driver that goes away closes the pipe behind standard output; with
	// SIGPIPE ignored the next answer fails with an error the loop handles,
	// instead of the signal killing the harness before it stops its servers.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin, version, err := findServer(opts.serverBin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFailed
	}
	dir, err := os.MkdirTemp("", "jetstream-peer-")
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFailed
	}
	defer func() {
		if opts.keep {
			fmt.Fprintf(stderr, "%s: kept %s\n", prog, dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "%s: removing %s: %v\n", prog, dir, err)
		}
	}()
	p := &peer{bin: bin, version: strings.Replace(version, ":", "", 1), dir: dir, keep: opts.keep, stderr: stderr}
	defer p.stop()
	return p.loop(ctx, stdin, stdout)
}

// parseFlags parses the command line. When ok is false the harness must
// exit with code: -h asked for help, or a flag was wrong.
func parseFlags(args []string, stderr io.Writer) (opts options, code int, ok bool) {
	name := filepath.Base(os.Args[0])
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, usageText, name, name)
		fs.PrintDefaults()
	}
	fs.StringVar(&opts.serverBin, "nats-server", "nats-server", "the nats-server binary: a path, or a name looked up on PATH")
	fs.BoolVar(&opts.keep, "keep", false, "keep the temporary directory (configurations, stores and server logs) and print its path")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, exitOK, false
		}
		return opts, exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", prog, fs.Arg(0))
		fs.Usage()
		return opts, exitUsage, false
	}
	return opts, exitOK, true
}

// loop answers the commands of stdin one at a time until its end or a
// signal, and returns the exit code.
func (p *peer) loop(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	lines := readLines(stdin)
	for {
		var line string
		select {
		case <-ctx.Done():
			return exitOK
		case l, ok := <-lines:
			if !ok {
				return exitOK
			}
			line = l
		}
		answer := p.serve(ctx, line)
		if ctx.Err() != nil {
			// A signal arrived during the command: whoever sent it is
			// not waiting for the answer, which would only report the
			// interruption.
			return exitOK
		}
		if _, err := stdout.Write(answer); err != nil {
			fmt.Fprintf(p.stderr, "%s: writing an answer: %v\n", prog, err)
			return exitFailed
		}
	}
}

// findServer resolves the nats-server flag and asks the binary for its
// version, so that a wrong path, or a path to some other program, fails at
// once with a clear message rather than as a cluster that never forms.
func findServer(flagValue string) (bin, version string, err error) {
	bin, err = exec.LookPath(flagValue)
	if err != nil {
		return "", "", fmt.Errorf("--nats-server %q: %w (install one with: go install github.com/nats-io/nats-server/v2@latest)", flagValue, err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	switch {
	case err != nil:
		return "", "", fmt.Errorf("--nats-server %q: \"%s --version\" failed: %v (it printed %q)", flagValue, bin, err, version)
	case !strings.HasPrefix(version, "nats-server:"):
		return "", "", fmt.Errorf("--nats-server %q does not look like nats-server: \"%s --version\" printed %q", flagValue, bin, version)
	}
	return bin, version, nil
}

// readLines sends each line of r, without its line ending, on the channel
// it returns, and closes it at the end of r. Reading runs in its own
// goroutine so that the main loop can also wait for a signal.
func readLines(r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// serve answers one command line with one JSON line, ending in a newline.
// Every line gets exactly one answer, even a blank or unknown one, so that
// a driver waiting for an answer is never left hanging.
func (p *peer) serve(ctx context.Context, line string) []byte {
	switch protocol.Command(line) {
	case "drain":
		return p.serveDrain(ctx, line)
	case "failover":
		return p.serveFailover(ctx, line)
	case "publish":
		return p.servePublish(ctx, line)
	case "create":
		return p.serveCreate(ctx, line)
	}
	return protocol.Error(protocol.Unknown(line))
}

// serveDrain answers a drain command, starting the drains' shared
// cluster first if this is the first drain.
func (p *peer) serveDrain(ctx context.Context, line string) []byte {
	req, err := protocol.ParseDrain(line)
	if err != nil {
		return protocol.Error(err)
	}
	if err := p.start(ctx); err != nil {
		return protocol.Error(err)
	}
	res, err := p.drain(ctx, req)
	if err != nil {
		return protocol.Error(err)
	}
	return protocol.Line(protocol.DrainAnswer{Handled: res.handled.Seconds(), Settled: res.settled.Seconds()})
}

// servePublish answers a publish command on the drains' cluster.
func (p *peer) servePublish(ctx context.Context, line string) []byte {
	req, err := protocol.ParsePublish(line)
	if err != nil {
		return protocol.Error(err)
	}
	if err := p.start(ctx); err != nil {
		return protocol.Error(err)
	}
	ans, err := p.publishWindow(ctx, req)
	if err != nil {
		return protocol.Error(err)
	}
	return protocol.Line(ans)
}

// serveFailover answers a failover command.
func (p *peer) serveFailover(ctx context.Context, line string) []byte {
	req, err := protocol.ParseFailover(line)
	if err != nil {
		return protocol.Error(err)
	}
	res, err := p.failover(ctx, req)
	if err != nil {
		return protocol.Error(err)
	}
	return protocol.Line(protocol.FailoverAnswer{FirstPublish: res.publish.Seconds(), FirstDelivery: res.delivery.Seconds()})
}

// serveCreate answers a create command, on a cluster of its own.
func (p *peer) serveCreate(ctx context.Context, line string) []byte {
	req, err := protocol.ParseCreate(line)
	if err != nil {
		return protocol.Error(err)
	}
	ans, err := p.create(ctx, req)
	if err != nil {
		return protocol.Error(err)
	}
	return protocol.Line(ans)
}

// Command jetstream is cairn-bench's peer harness for NATS JetStream: it
// runs the drain benchmark's workload on a three-node JetStream cluster so
// that cairn's figures can be read as ratios of a well-known system's on
// the same machine.
//
// It starts three nats-server processes on 127.0.0.1, each with file
// storage and every write synced (as cairn syncs), and then answers one
// command per line of standard input with one JSON line on standard
// output:
//
//	drain <messages> <payload bytes> <async|sync>
//	{"handled_seconds": 1.23, "settled_seconds": 1.25}   or   {"error": "..."}
//
// cairn-bench starts it with "cairn-bench drain --peer CMD". At the end of
// its input, or on SIGINT or SIGTERM, it stops its servers, removes its
// files and exits 0.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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

// readyTimeout bounds the wait for the new cluster to elect a JetStream
// meta leader and accept a replicated stream; three servers on loopback
// normally need a few seconds.
const readyTimeout = 30 * time.Second

// usageText is printed by -h and after a flag error.
const usageText = `usage: %s [--nats-server PATH] [--keep]

A peer harness for "cairn-bench drain": it runs the drain benchmark's
workload on NATS JetStream, so that cairn's drain rates can be compared with
those of another replicated, fsyncing broker on the same machine. It is not
meant to be run alone, but it can be, by typing commands.

It starts a three-node JetStream cluster of nats-server processes on
127.0.0.1 (file storage, sync_interval: always), then reads one command a
line on standard input and answers each with one JSON line on standard
output:

  drain <messages> <payload bytes> <async|sync>
      publishes the messages to a fresh three-replica stream (256 in flight),
      then times one consumer whose handler acks each message before it
      returns (async: Ack, sync: DoubleAck), and answers
      {"handled_seconds": S, "settled_seconds": S} or {"error": "..."}

At the end of its input, or on SIGINT or SIGTERM, it stops its servers,
removes its temporary directory and exits 0. Diagnostics go to standard
error; each server logs to a file in the temporary directory.

Typical use: cairn-bench drain --peer "%s --nats-server /path/to/nats-server"

flags:
`

// main runs the harness and exits with the code run returns.
func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code rather than exiting,
// so that its deferred clean-ups (stopping the servers, removing the
// temporary directory) always run.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := filepath.Base(os.Args[0])
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, usageText, name, name)
		fs.PrintDefaults()
	}
	serverBin := fs.String("nats-server", "nats-server", "the nats-server binary: a path, or a name looked up on PATH")
	keep := fs.Bool("keep", false, "keep the temporary directory (configurations, stores and server logs) and print its path")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", prog, fs.Arg(0))
		fs.Usage()
		return exitUsage
	}

	// A driver that goes away closes the pipe behind standard output; with
	// SIGPIPE ignored the next answer fails with an error the loop handles,
	// instead of the signal killing the harness before it stops its servers.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin, version, err := findServer(*serverBin)
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
		if *keep {
			fmt.Fprintf(stderr, "%s: kept %s\n", prog, dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "%s: removing %s: %v\n", prog, dir, err)
		}
	}()

	cl, err := startCluster(bin, dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFailed
	}
	defer cl.stop(stderr)
	nc, err := cl.waitReady(ctx, readyTimeout)
	if err != nil {
		if ctx.Err() != nil {
			// Being told to stop while the cluster forms is no failure.
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitFailed
	}
	defer nc.Close()
	fmt.Fprintf(stderr, "%s: three %s processes ready on %s\n", prog, strings.Replace(version, ":", "", 1), strings.Join(cl.clientURLs(), ", "))

	p := &peer{nc: nc, urls: strings.Join(cl.clientURLs(), ","), stderr: stderr}
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
			// A signal arrived during the drain: whoever sent it is not
			// waiting for the answer, which would only report the
			// interruption.
			return exitOK
		}
		if _, err := stdout.Write(answer); err != nil {
			fmt.Fprintf(stderr, "%s: writing an answer: %v\n", prog, err)
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
	req, err := parseRequest(line)
	if err != nil {
		return errorAnswer(err)
	}
	res, err := p.drain(ctx, req)
	if err != nil {
		return errorAnswer(err)
	}
	return jsonLine(struct {
		Handled float64 `json:"handled_seconds"`
		Settled float64 `json:"settled_seconds"`
	}{res.handled.Seconds(), res.settled.Seconds()})
}

// errorAnswer renders a failure as the protocol's error line.
func errorAnswer(err error) []byte {
	return jsonLine(struct {
		Error string `json:"error"`
	}{err.Error()})
}

// jsonLine renders v as one line of JSON. HTML escaping is off so that an
// error quoting the protocol's "<messages>" stays readable to a person.
// The values given are plain structs of numbers and strings, which always
// encode, so an encoding error cannot happen.
func jsonLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return b.Bytes()
}

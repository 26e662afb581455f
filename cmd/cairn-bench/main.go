// Command cairn-bench measures cairn on real processes. Benchmarks are
// not tests: they print measurements and count broken promises, but a slow
// run is not a failed one.
//
//	cairn-bench failover [--trials 30] [--backlog 0|10000|100000] [--traffic idle|warm] [--fault kill|stop]
//	                     [--nodes 3|5] [--victim owner|owner+leader] [--node-bin PATH] [--peer CMD]
//
// failover starts a fresh cluster of cairn-node processes on loopback for
// every trial, SIGKILLs (or SIGSTOPs) the owner of a majority queue, and
// reports how long detection, activation, the first delivery to a fresh
// subscriber and the first new confirmed publish took, whether every
// confirmed message was delivered, whether a stopped owner confirmed
// anything sent to it, and where the time went, stage by stage, as the
// survivors' logs tell it; with --peer, a peer system's harness (bench/)
// kills the leader of its own stream in turn, and the report gives the
// peer's times as ratios of cairn's.
//
//	cairn-bench history [--settled 1000000] [--backlog 10000] [--trials 30] [--checkpoints on|off] [--empty-traffic touched|idle] [--node-bin PATH] [--keep]
//
// history runs two long-lived three-node clusters side by side: one whose
// queue is empty and one whose queue first carried a long settled history
// and then holds a backlog before every kill. The empty queue takes and
// settles a few messages before each kill, so both owners are as freshly
// busy (unless --empty-traffic idle). Each round kills the owner
// of each cluster in turn, measures the recovery as failover does,
// restarts the killed node and measures how long it takes to catch up;
// the report gives both distributions and their ratios.
//
//	cairn-bench throughput [--rounds 6] [--window 15s] [--in-flight 256] [--a-bin PATH] [--a-settings TOML] [--b-bin PATH] [--b-settings TOML]
//
// throughput compares two configurations (a node binary and lines added to
// every node's configuration each) on two clusters driven in turn, so that
// both meet the same machine noise: pipelined publishes and a subscriber
// acking everything with Ack (as a JetStream consumer's Ack, nobody waits
// for the outcome), the throughput of each window and the confirm latency
// of every publish, and B's figures as ratios of A's.
//
//	cairn-bench soak [--rate 1000] [--duration 10m] [--interval 30s] [--size 1024] [--node-bin PATH] [--dir DIR] [--settings TOML] [--json]
//
// soak starts one fresh three-node cluster, publishes to a majority queue
// at a steady rate while one subscriber acks everything, prints every
// interval the end-to-end time of the messages delivered in it (from the
// start of a publish to the first delivery: median and p99) and each
// node's data directory size, RSS, open files, Go heap and goroutines,
// and ends with how fast each grew, per minute and per confirmed
// message, the end-to-end distribution of the whole run, and whether
// every confirmed message was delivered.
//
//	cairn-bench drain [--messages 20000] [--rounds 3] [--ack async,sync] [--window N] [--concurrency N] [--node-bin PATH] [--peer CMD] [--cpu-profile DIR]
//
// drain starts one three-node cluster and, each round, publishes a
// backlog and times one subscriber draining it with a handler that acks
// each delivery before it returns (with Ack, or AckSync); with --peer, a
// peer system's harness (bench/) drains the same workload in turn, and
// the report gives cairn's rates as ratios of the peer's.
//
//	cairn-bench queues [--queues 500] [--concurrency 1] [--idle 15s] [--node-bin PATH] [--cpu-profile DIR]
//
// queues starts one fresh three-node cluster, creates the queues with
// concurrent creators, each waiting for its create before the next, and
// reports the creation rate and each create's latency; after an idle
// period it reports each node's RSS, Go heap, goroutines, open files and
// data directory, and their growth per queue.
//
//	cairn-bench wake [--rounds 20] [--idle 3s] [--node-bin PATH]
//
// wake starts one fresh three-node cluster with one majority queue and
// times, round after round, a publish sent 50 ms after the last one
// against one sent after the queue idled long enough for its owner to
// rest (the resting owner's wake costs the second a round trip).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes: a trial that lost a confirmed message, or in which a stopped
// owner confirmed a publish, is worse than one that did not come back in
// time.
const (
	exitOK         = 0
	exitLost       = 1
	exitIncomplete = 2
	exitFailed     = 3
	exitUsage      = 64
)

// usage is the command's help, printed by "help" and after a wrong command.
const usage = `usage: cairn-bench <command> [flags]

commands:
  failover  kill (or stop) a queue's owner once per trial, on a fresh cluster of
            cairn-node processes, and report the time from the kill to detection,
            activation, first delivery and first confirmed publish, any confirmed
            message lost, and each stage of the failover from the nodes' logs,
            optionally side by side with a peer system's harness: [--trials 30]
            [--backlog N] [--traffic idle|warm] [--fault kill|stop] [--nodes 3|5]
            [--victim owner|owner+leader] [--node-bin PATH] [--peer CMD]
            (run "cairn-bench failover -h" for every flag)
  history   kill, in turn, the owners of two long-lived clusters, one with an
            empty queue and one whose queue carried a long settled history and
            holds a backlog, restart each killed node, and report both
            recoveries, their ratios and the restart times: [--settled 1000000]
            [--backlog 10000] [--trials 30] [--checkpoints on|off]
            [--empty-traffic touched|idle] [--node-bin PATH] [--keep] (run "cairn-bench history -h" for every flag)
  throughput drive two clusters in turn (side A and side B: a node binary and
            configuration lines each) with pipelined publishes and an acking
            subscriber, and report each side's throughput and confirm latency
            and B's as a ratio of A's: [--rounds 6] [--window 15s] [--in-flight 256]
            [--a-bin PATH] [--a-settings TOML] [--b-bin PATH] [--b-settings TOML]
  soak      run one fresh three-node cluster under a steady producer and an
            acking subscriber, print every interval the messages' end-to-end
            times (median, p99) and each node's data directory size, RSS,
            open files, Go heap and goroutines, then their growth per minute
            and per confirmed message, and any confirmed message lost:
            [--rate 1000] [--duration 10m] [--interval 30s] [--size 1024]
            [--node-bin PATH] [--dir DIR] [--settings TOML] [--json]
            (run "cairn-bench soak -h" for every flag)
  drain     publish a backlog and time one subscriber draining it with a handler
            that acks each delivery, per ack mode, optionally side by side with
            a peer system's harness: [--messages 20000] [--rounds 3]
            [--ack async,sync] [--window N] [--node-bin PATH] [--peer CMD]
            (run "cairn-bench drain -h" for every flag)
  queues    create many queues on one fresh three-node cluster with concurrent
            creators, report the creation rate and per-create latency, then
            idle and report each node's memory, goroutines, descriptors and
            data directory per queue: [--queues 500] [--concurrency 1]
            [--idle 15s] [--node-bin PATH] [--cpu-profile DIR]
            (run "cairn-bench queues -h" for every flag)
  wake      on one fresh three-node cluster, time a publish to an awake queue
            owner against one after the queue idled long enough for its owner
            to rest: [--rounds 20] [--idle 3s] [--node-bin PATH]
  handoff   on one three-node cluster under a steady pipelined publisher and an
            acking subscriber, move the queue's owner to the next replica in turn
            (MoveOwner), then SIGKILL (or SIGSTOP) the owner a few times, and
            report each kind's unavailability gap (the longest time between two
            publish confirmations), MoveOwner's latency, failed publishes,
            duplicates and lost messages: [--trials 30] [--kills 10]
            [--fault kill|stop] [--rate 1000] [--node-bin PATH] [--dir DIR]
            (run "cairn-bench handoff -h" for every flag)

exit codes: 0 ok, 1 a confirmed message was lost (or a stopped owner confirmed a
publish sent to it), 2 a trial did not recover in time (soak: a node exited
early or did not stop cleanly on SIGTERM), 3 the benchmark could not run,
64 usage
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "failover":
		return cmdFailover(ctx, args[1:], stdout, stderr)
	case "throughput":
		return cmdThroughput(ctx, args[1:], stdout, stderr)
	case "history":
		return cmdHistory(ctx, args[1:], stdout, stderr)
	case "soak":
		return cmdSoak(ctx, args[1:], stdout, stderr)
	case "drain":
		return cmdDrain(ctx, args[1:], stdout, stderr)
	case "queues":
		return cmdQueues(ctx, args[1:], stdout, stderr)
	case "handoff":
		return cmdHandoff(ctx, args[1:], stdout, stderr)
	case "wake":
		return cmdWake(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "cairn-bench: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// reporter prints a command's errors under its name and returns the exit
// code each calls for.
type reporter struct {
	name string
	w    io.Writer
}

// usage reports a flag error and returns exitUsage; for -h the flag
// package has already printed the help.
func (r reporter) usage(err error) int {
	if err != flag.ErrHelp {
		fmt.Fprintln(r.w, r.name+":", err)
	}
	return exitUsage
}

// failed reports an error that stopped the benchmark and returns
// exitFailed.
func (r reporter) failed(err error) int {
	fmt.Fprintln(r.w, r.name+":", err)
	return exitFailed
}

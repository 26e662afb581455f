package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cairnmq/cairn/client"
)

// wakeConfig is the configuration of the wake benchmark.
type wakeConfig struct {
	rounds   int
	idle     time.Duration // between a round's two publishes
	nodeBin  string
	dir      string
	settings string
	logLevel string
}

// parseWake parses the wake command's flags.
func parseWake(args []string, stderr io.Writer) (wakeConfig, error) {
	var c wakeConfig
	fs := flag.NewFlagSet("cairn-bench wake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.rounds, "rounds", 20, "rounds, each an awake publish and one after --idle")
	fs.DurationVar(&c.idle, "idle", 3*time.Second, "how long the queue idles before a round's second publish (owners rest after rest_after, 2s by default)")
	fs.StringVar(&c.nodeBin, "node-bin", "", "the cairn-node binary (default: build it from this module into a temporary directory)")
	fs.StringVar(&c.dir, "dir", "", "put the cluster's data, configurations and logs here, and keep them (default: a temporary directory, removed)")
	fs.StringVar(&c.settings, "settings", "", "TOML lines added to every node's configuration")
	fs.StringVar(&c.logLevel, "log-level", soakLogLevel, "the nodes' log level")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.rounds < 1:
		return c, fmt.Errorf("--rounds %d: need at least one", c.rounds)
	case c.idle <= 0:
		return c, errors.New("--idle must be positive")
	}
	return c, nil
}

// wakeAwakeGap is how long after a confirmed publish a round's awake
// publish goes: well within the owner's grant, so it measures a
// publish to an owner that does not rest.
const wakeAwakeGap = 50 * time.Millisecond

// cmdWake times, on one fresh cluster and one majority queue, a publish
// sent while the queue's owner is awake against one sent after the queue
// idled long enough for its owner to rest, round after round.
func cmdWake(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rep := reporter{name: "cairn-bench wake", w: stderr}
	cfg, err := parseWake(args, stderr)
	if err != nil {
		return rep.usage(err)
	}
	bin, dir, cl, cleanup, err := freshCluster(ctx, cfg.nodeBin, cfg.dir, cfg.logLevel, cfg.settings)
	defer cleanup()
	if err != nil {
		return rep.failed(err)
	}
	fmt.Fprintf(stdout, "cairn-bench wake: a fresh cluster of 3 cairn-node processes on loopback (%s, in %s); "+
		"%d rounds of a publish %v after the last one and one after %v idle\n", bin, dir, cfg.rounds, wakeAwakeGap, cfg.idle)
	awake, rested, err := runWake(ctx, cfg, cl)
	clean := stopCluster(cl, stderr)
	if err != nil {
		return rep.failed(err)
	}
	for _, row := range []struct {
		what string
		ds   []time.Duration
	}{{"awake", awake}, {fmt.Sprintf("after %v idle", cfg.idle), rested}} {
		p := latencyPercentiles(row.ds)
		fmt.Fprintf(stdout, "publish %-16s median %s  p99 %s  max %s  (%d publishes)\n", row.what, us(p.p50), us(p.p99), us(p.max), len(row.ds))
	}
	if !clean {
		return exitIncomplete
	}
	return exitOK
}

// runWake publishes the rounds and returns each publish's confirm
// latency, awake and after the idle.
func runWake(ctx context.Context, cfg wakeConfig, cl *cluster) (awake, rested []time.Duration, err error) {
	if err := cl.waitHealthy(ctx, 20*time.Second); err != nil {
		return nil, nil, err
	}
	c, err := client.Dial(ctx, client.Options{Secret: []byte(benchSecret)}, cl.clientAddrs()...)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	const queue = "wake"
	if err := createQueueNamed(ctx, c, queue, 30*time.Second); err != nil {
		return nil, nil, err
	}
	publish := func() (time.Duration, error) {
		began := time.Now()
		_, err := c.Publish(ctx, queue, []byte("wake"))
		return time.Since(began), err
	}
	if _, err := publish(); err != nil { // the client finds the owner
		return nil, nil, err
	}
	for range cfg.rounds {
		if err := sleep(ctx, wakeAwakeGap); err != nil {
			return nil, nil, err
		}
		d, err := publish()
		if err != nil {
			return nil, nil, err
		}
		awake = append(awake, d)
		if err := sleep(ctx, cfg.idle); err != nil {
			return nil, nil, err
		}
		if d, err = publish(); err != nil {
			return nil, nil, err
		}
		rested = append(rested, d)
	}
	return awake, rested, nil
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/cairnmq/cairn/live"
	"github.com/cairnmq/cairn/live/sqs"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1  // the node failed to start or stopped itself
	exitUsage  = 64 // bad flags or configuration
)

const usage = `usage:
  cairn-node --config node.toml [--data-dir D] [--log-level L] [--rejoin]
  cairn-node dev [--nodes 3] [--dir D] [--base-port 7000] [--log-level warn]
  cairn-node certs --dir D [--nodes 3] [--hosts localhost,127.0.0.1,::1]
`

// run dispatches to a subcommand and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "dev":
			return runDev(args[1:], stdout, stderr)
		case "certs":
			return runCerts(args[1:], stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return exitOK
		}
	}
	return runServe(args, stderr)
}

// runServe serves one node from a configuration file until SIGTERM or
// SIGINT, then drains.
func runServe(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn-node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the node's TOML configuration file (required)")
	dataDir := fs.String("data-dir", "", "override data_dir")
	logLevel := fs.String("log-level", "", "override log_level: debug, info, warn or error")
	rejoin := fs.Bool("rejoin", false, "this node's data directory was lost: start over an empty one without voting in the metadata "+
		"until it has caught up with the cluster (see the README's operations section); ignored if the directory holds metadata")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *configPath == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	cfg, sqsCfg, err := serveConfig(*configPath, *dataDir, *logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	cfg.Node.Rejoin = *rejoin
	return serve(cfg, sqsCfg, stderr)
}

// serveConfig loads, overrides and validates the configuration: the
// node's, and the SQS endpoint's if it has one.
func serveConfig(path, dataDir, logLevel string, stderr io.Writer) (live.Config, *sqs.EndpointConfig, error) {
	fc, err := loadConfig(path)
	if err != nil {
		return live.Config{}, nil, err
	}
	if dataDir != "" {
		fc.DataDir = dataDir
	}
	if logLevel != "" {
		fc.LogLevel = logLevel
	}
	if err := fc.validate(); err != nil {
		return live.Config{}, nil, err
	}
	level, _ := parseLevel(fc.LogLevel)
	logger := newLogger(stderr, level, fc.LogFormat)
	cfg, err := fc.liveConfig(logger)
	if err != nil {
		return live.Config{}, nil, err
	}
	sqsCfg, err := fc.sqsEndpoint(cfg, logger)
	return cfg, sqsCfg, err
}

// serve runs one node, and its SQS endpoint when sqsCfg is set, until a
// signal.
func serve(cfg live.Config, sqsCfg *sqs.EndpointConfig, stderr io.Writer) int {
	rt, err := live.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "cairn-node:", err)
		return exitFailed
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	endpointDone, err := startSQS(ctx, rt, sqsCfg)
	if err != nil {
		fmt.Fprintln(stderr, "cairn-node:", err)
		return exitFailed
	}
	err = rt.Run(ctx)
	stop() // the node stopped on its own: the endpoint goes too
	if epErr := <-endpointDone; epErr != nil {
		fmt.Fprintln(stderr, "cairn-node: SQS endpoint:", epErr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "cairn-node:", err)
		return exitFailed
	}
	return exitOK
}

// startSQS opens the SQS endpoint's port and serves it beside the node
// until ctx ends; the channel gets its outcome. Without an endpoint it
// gets nil at once.
func startSQS(ctx context.Context, rt *live.Runtime, cfg *sqs.EndpointConfig) (<-chan error, error) {
	done := make(chan error, 1)
	if cfg == nil {
		done <- nil
		return done, nil
	}
	ep, err := sqs.Listen(*cfg)
	if err != nil {
		return nil, err
	}
	go func() { done <- ep.Run(ctx, rt) }()
	return done, nil
}

// newLogger writes lines at level and above to w, as key=value text or,
// for format "json", as one JSON object a line; both carry the same keys.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == logFormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

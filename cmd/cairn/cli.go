package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/live/status"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1 // an operation certainly failed, or the cluster was unreachable
	exitShort   = 2 // consume: --timeout passed before --count messages were consumed
	exitUnknown = 3 // some operation's outcome is unknown
	exitUsage   = 64
)

// devSecret, devAdminSecret and devAddrs match what `cairn-node dev`
// starts, so the CLI works with the dev cluster out of the box.
const (
	devSecret      = "cairn-dev-cluster-secret"
	devAdminSecret = "cairn-dev-admin-secret"
	devAddrs       = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
)

const usage = `usage: cairn COMMAND [flags]

  queue create NAME [--policy majority|all|owner-only] [--dedup-window D]
  queue set NAME (--dead-letter Q --max-deliveries N | --no-dead-letter)
  queue delete NAME
  queue purge NAME                      (removes every message it holds)
  queue move-owner NAME --to N [--drain D]
                  (hands the queue to its replica on node N; admin)
  queue list
  queue stats [NAME...] [--interval D] [--json]
  publish QUEUE [MSG...] [--delay D] [--from-file F]
                  (one message per line of F, or of stdin, when no MSG)
  consume QUEUE [--ack] [--count N] [--timeout D] [--window W] [--lease D]
                  (until N were consumed, D passed, or interrupted)
  cluster status
  cluster members
  cluster add-node --id N --addr HOST:PORT [--client-addr HOST:PORT] [--http-addr HOST:PORT]
                  (admits node N, reached by its peers at HOST:PORT, as a
                  learner; start it with join = true; admin)
  cluster rebalance
                  (spreads existing queues' replicas over the members, one
                  move at a time; admin)
  cluster remove-node N [--wait D]
                  (marks node N leaving, then waits up to D, default 10m,
                  until its queues have moved and it has left; admin)
  node drain N [--drain D]
                  (moves every queue node N owns to another replica, one
                  at a time; admin. N keeps serving as a follower, and a
                  failover may still choose it until it is stopped)

Connection flags (every command):
  --addrs A,B,C   client addresses (env CAIRN_ADDRS; default the dev cluster's)
  --secret S      client secret (env CAIRN_SECRET; default the dev cluster's)
  --admin         connect in the admin role, needed to delete queues
                  (env CAIRN_ADMIN=1); implied by --admin-secret, and by
                  move-owner, node drain, add-node and remove-node
  --admin-secret S  admin secret (env CAIRN_ADMIN_SECRET; with --admin,
                  default the dev cluster's)
  --ca, --cert, --key  mutual TLS files (env CAIRN_CA, CAIRN_CERT, CAIRN_KEY);
                  with --admin the certificate must name the admin role
  --timeout D     how long one command may take (default 30s; consume: none;
                  move-owner, node drain: each move, and at least --drain
                  plus 15s)

Exit status: 0 done; 1 an operation failed or the cluster was unreachable;
2 consume --count N --timeout D consumed fewer than N in time (it says how
many); 3 some outcome is unknown; 64 usage.
`

// env carries a command's streams.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// conn holds the connection flags every command shares.
type conn struct {
	addrs, secret, adminSecret, ca, cert, key string
	admin                                     bool
	timeout                                   time.Duration
}

// newFlags returns a flag set with the connection flags registered.
func newFlags(name string, e env) (*flag.FlagSet, *conn) {
	fs := flag.NewFlagSet("cairn "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c := &conn{}
	fs.StringVar(&c.addrs, "addrs", envOr("CAIRN_ADDRS", devAddrs), "comma-separated client addresses")
	fs.StringVar(&c.secret, "secret", envOr("CAIRN_SECRET", devSecret), "client secret (when TLS is off)")
	fs.StringVar(&c.adminSecret, "admin-secret", os.Getenv("CAIRN_ADMIN_SECRET"), "admin secret (when TLS is off); implies --admin")
	fs.BoolVar(&c.admin, "admin", os.Getenv("CAIRN_ADMIN") == "1", "connect in the admin role")
	fs.StringVar(&c.ca, "ca", os.Getenv("CAIRN_CA"), "CA certificate (PEM) for mutual TLS")
	fs.StringVar(&c.cert, "cert", os.Getenv("CAIRN_CERT"), "client certificate (PEM)")
	fs.StringVar(&c.key, "key", os.Getenv("CAIRN_KEY"), "client key (PEM)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long the command may take")
	return fs, c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parse parses args allowing flags before, between and after the
// positional arguments, which the flag package alone does not.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// dial connects to the cluster with the connection flags.
func (c *conn) dial(ctx context.Context) (*client.Client, error) {
	return c.dialWith(ctx, func(*client.Options) {})
}

// withClient runs one command's work with a client connected for it,
// within the command's timeout, and returns its exit status; a failure
// to connect is reported as such.
func (c *conn) withClient(e env, run func(ctx context.Context, cl *client.Client) int) int {
	ctx, cancel := c.context()
	defer cancel()
	cl, err := c.dial(ctx)
	if err != nil {
		return failure(e, "connecting", err)
	}
	defer cl.Close()
	return run(ctx, cl)
}

// dialWith connects as dial does, with the options adjusted by adjust.
func (c *conn) dialWith(ctx context.Context, adjust func(*client.Options)) (*client.Client, error) {
	// An operation retries for as long as the command may take, so a
	// publish sent during a failover waits for the new owner rather than
	// giving up early; --timeout bounds the whole command.
	opts := client.Options{Admin: c.isAdmin(), RetryFor: c.timeout}
	adjust(&opts)
	if c.usesTLS() {
		t, err := clientTLS(c.ca, c.cert, c.key)
		if err != nil {
			return nil, err
		}
		opts.TLS = t
	} else {
		opts.Secret = []byte(c.roleSecret())
	}
	var addrs []string
	for _, a := range strings.Split(c.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return client.Dial(ctx, opts, addrs...)
}

// usesTLS reports whether the flags ask for mutual TLS.
func (c *conn) usesTLS() bool { return c.ca != "" || c.cert != "" || c.key != "" }

// isAdmin reports whether to connect in the admin role.
func (c *conn) isAdmin() bool { return c.admin || c.adminSecret != "" }

// roleSecret is the secret of the role the CLI connects in: the admin
// secret (the dev cluster's unless given) or the client secret.
func (c *conn) roleSecret() string {
	if !c.isAdmin() {
		return c.secret
	}
	if c.adminSecret == "" {
		return devAdminSecret
	}
	return c.adminSecret
}

// statusAuth is how the CLI authenticates to the nodes' HTTP ports, which
// serve /status only to a client or an admin: with the same certificate
// over HTTPS, or with the same secret as a bearer token.
func (c *conn) statusAuth() (status.Auth, error) {
	if !c.usesTLS() {
		return status.Auth{Secret: []byte(c.roleSecret())}, nil
	}
	t, err := clientTLS(c.ca, c.cert, c.key)
	return status.Auth{TLS: t}, err
}

// context returns the command's context, bounded by --timeout.
func (c *conn) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.timeout)
}

// run dispatches a command line and returns the exit status.
func run(args []string, e env) int {
	// Connection flags may come before the command too; they are handed
	// on to the command, whose parser accepts them anywhere.
	global, _ := newFlags("", e)
	global.SetOutput(io.Discard)
	if err := global.Parse(args); err != nil {
		fmt.Fprintf(e.stderr, "cairn: %v\n%s", err, usage)
		return exitUsage
	}
	leading := args[:len(args)-global.NArg()]
	args = global.Args()
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	if cmd == "queue" || cmd == "cluster" || cmd == "node" {
		if len(rest) == 0 {
			fmt.Fprint(e.stderr, usage)
			return exitUsage
		}
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	commands := map[string]func([]string, env) int{
		"queue create": queueCreate, "queue delete": queueDelete, "queue list": queueList,
		"queue set":   queueSet,
		"queue purge": queuePurge,
		"queue stats": queueStats, "queue move-owner": queueMoveOwner, "node drain": nodeDrain,
		"publish": publish, "consume": consume, "cluster status": clusterStatus,
		"cluster members": clusterMembers, "cluster add-node": clusterAddNode, "cluster remove-node": clusterRemoveNode, "cluster rebalance": clusterRebalance,
	}
	if f, ok := commands[cmd]; ok {
		return f(append(rest, leading...), e)
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(e.stdout, usage)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "cairn: unknown command %q\n%s", cmd, usage)
	return exitUsage
}

// failure prints err and returns the matching exit status.
func failure(e env, what string, err error) int {
	fmt.Fprintf(e.stderr, "cairn: %s: %v\n", what, err)
	if errors.Is(err, client.ErrUnknownOutcome) {
		return exitUnknown
	}
	return exitFailed
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterSize is the number of servers: three, as in cairn-bench's own
// clusters, so that both systems replicate every message to a majority of
// three.
const clusterSize = 3

// stopGrace is how long a server may take to shut down after SIGTERM
// before it is killed.
const stopGrace = 5 * time.Second

// server is one nats-server process of the cluster.
type server struct {
	name      string
	clientURL string
	log       string
	cmd       *exec.Cmd
	exited    chan struct{} // closed once the process has exited
	waitErr   error         // how it exited; read only after exited is closed
}

// cluster is a three-node JetStream cluster of nats-server processes on
// loopback, with its configurations, stores and logs in one directory.
type cluster struct {
	servers []*server
}

// freePorts finds n distinct free loopback ports by binding them all at
// once and then releasing them. Another program could take one in between;
// the cluster then fails to form and the error says so.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, ln := range listeners {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// serverConfig renders the configuration of one server. Every server lists
// every route, its own included (nats-server skips a route to itself), so
// that the three configurations differ only in name, ports and store.
// sync_interval: always makes JetStream fsync every write before it is
// acknowledged, as cairn does, so that the comparison is between two
// systems that both promise durability on a majority's disks.
func serverConfig(name string, clientPort, routePort int, storeDir string, routes []string) string {
	return fmt.Sprintf(`server_name: %q
listen: "127.0.0.1:%d"

jetstream {
  store_dir: %q
  sync_interval: always
}

cluster {
  name: "jetstream-peer"
  listen: "127.0.0.1:%d"
  routes: [
    %s
  ]
}
`, name, clientPort, storeDir, routePort, strings.Join(routes, "\n    "))
}

// startCluster writes three server configurations under dir and starts one
// nats-server process for each. It does not wait for the cluster to form:
// waitReady does.
func startCluster(bin, dir string) (*cluster, error) {
	ports, err := freePorts(2 * clusterSize)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := range clusterSize {
		routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", ports[2*i+1])))
	}
	cl := &cluster{}
	for i := range clusterSize {
		name := fmt.Sprintf("n%d", i+1)
		s := &server{
			name:      name,
			clientURL: fmt.Sprintf("nats://127.0.0.1:%d", ports[2*i]),
			log:       filepath.Join(dir, name+".log"),
		}
		config := filepath.Join(dir, name+".conf")
		text := serverConfig(name, ports[2*i], ports[2*i+1], filepath.Join(dir, name), routes)
		if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
			cl.stop(io.Discard)
			return nil, err
		}
		if err := s.start(bin, config); err != nil {
			cl.stop(io.Discard)
			return nil, err
		}
		cl.servers = append(cl.servers, s)
	}
	return cl, nil
}

// start launches s with the given configuration; the process's output goes
// to s's log file, never to the harness's standard output, which carries
// only answers.
func (s *server) start(bin, config string) error {
	logf, err := os.Create(s.log)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(bin, "--config", config)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = serverProcAttr()
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	return nil
}

// clientURLs lists the servers' client URLs.
func (cl *cluster) clientURLs() []string {
	var urls []string
	for _, s := range cl.servers {
		urls = append(urls, s.clientURL)
	}
	return urls
}

// exitedServer returns an error describing the first server that has
// already exited, with the end of its log, or nil if all are running. A
// server that exits while the cluster forms (a bad configuration, a port
// taken in the meantime) would otherwise show only as a timeout.
func (cl *cluster) exitedServer() error {
	for _, s := range cl.servers {
		select {
		case <-s.exited:
			how := "with status 0"
			if s.waitErr != nil {
				how = "with " + s.waitErr.Error()
			}
			return fmt.Errorf("nats-server %s exited %s; the end of its log:\n%s", s.name, how, logTail(s.log, 15))
		default:
		}
	}
	return nil
}

// logTail returns the last n lines of the file at path, for error
// messages that must stand on their own once the directory is removed.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// waitReady connects to the cluster and waits until it accepts the
// creation of a three-replica file stream, which needs a JetStream meta
// leader and all three servers in the meta group. It retries until timeout
// and returns the connection, which the drains then share for setup and
// publishing.
func (cl *cluster) waitReady(ctx context.Context, timeout time.Duration) (*nats.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var nc *nats.Conn
	var last error
	for {
		if err := cl.exitedServer(); err != nil {
			if nc != nil {
				nc.Close()
			}
			return nil, err
		}
		if nc == nil {
			nc, last = nats.Connect(strings.Join(cl.clientURLs(), ","), nats.Name(prog), nats.Timeout(time.Second))
		}
		if nc != nil {
			if last = probe(ctx, nc); last == nil {
				return nc, nil
			}
		}
		select {
		case <-ctx.Done():
			if nc != nil {
				nc.Close()
			}
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("the JetStream cluster had no meta leader accepting a replicated stream within %v; last error: %v", timeout, last)
			}
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// probe creates and deletes a three-replica file stream, each attempt
// bounded so that a cluster still electing its leader is asked again soon.
// Creating a stream with an identical configuration is idempotent, so an
// attempt that timed out on the client but succeeded on the server does
// not make the next one fail.
func probe(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "READY",
		Subjects: []string{"ready"},
		Replicas: clusterSize,
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		return err
	}
	return js.DeleteStream(ctx, "READY")
}

// stop sends SIGTERM to every server, so that each shuts down as in
// production, and kills those still running after stopGrace. It returns
// once every process has exited, so that no server outlives the harness.
func (cl *cluster) stop(stderr io.Writer) {
	for _, s := range cl.servers {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	graceEnd := time.Now().Add(stopGrace)
	for _, s := range cl.servers {
		select {
		case <-s.exited:
		case <-time.After(time.Until(graceEnd)):
			// Once the grace period is over this case is ready at once,
			// and select may pick it over a server that has in fact
			// exited: look again before killing.
			select {
			case <-s.exited:
			default:
				fmt.Fprintf(stderr, "%s: nats-server %s did not stop within %v of SIGTERM; killing it\n", prog, s.name, stopGrace)
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
	}
}

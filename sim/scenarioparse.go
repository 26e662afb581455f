package sim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/netsim"
)

// keyValues is one directive's key=value arguments. Each getter consumes
// its key; done reports any key nobody asked for, so a misspelt option is
// an error rather than a silent zero.
type keyValues struct {
	m   map[string]string
	err error
}

func parseKeyValues(args []string) (*keyValues, error) {
	kv := &keyValues{m: make(map[string]string, len(args))}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", a)
		}
		if _, dup := kv.m[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		kv.m[k] = v
	}
	return kv, nil
}

// take returns the raw value of key, if present, and consumes it.
func (kv *keyValues) take(key string) (string, bool) {
	v, ok := kv.m[key]
	delete(kv.m, key)
	return v, ok
}

func (kv *keyValues) fail(key, v string, err error) {
	if kv.err == nil {
		kv.err = fmt.Errorf("%s=%s: %v", key, v, err)
	}
}

func (kv *keyValues) duration(key string, dst *time.Duration) {
	if v, ok := kv.take(key); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			kv.fail(key, v, err)
		}
		*dst = d
	}
}

func (kv *keyValues) float(key string, dst *float64) {
	if v, ok := kv.take(key); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			kv.fail(key, v, err)
		}
		*dst = f
	}
}

func (kv *keyValues) int(key string, dst *int) {
	if v, ok := kv.take(key); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			kv.fail(key, v, err)
		}
		*dst = n
	}
}

// span reads "lo..hi" into two durations.
func (kv *keyValues) span(key string, lo, hi *time.Duration) {
	if v, ok := kv.take(key); ok {
		a, b, found := strings.Cut(v, "..")
		x, err1 := time.ParseDuration(a)
		y, err2 := time.ParseDuration(b)
		if !found || err1 != nil || err2 != nil {
			kv.fail(key, v, fmt.Errorf("want MIN..MAX durations"))
		}
		*lo, *hi = x, y
	}
}

// tail reads "chance..max" into a latency's tail.
func (kv *keyValues) tail(key string, l *netsim.Latency) {
	if v, ok := kv.take(key); ok {
		a, b, found := strings.Cut(v, "..")
		c, err1 := strconv.ParseFloat(a, 64)
		m, err2 := time.ParseDuration(b)
		if !found || err1 != nil || err2 != nil {
			kv.fail(key, v, fmt.Errorf("want CHANCE..MAX"))
		}
		l.TailChance, l.TailMax = c, m
	}
}

// done returns the first error, or names the keys nobody consumed.
func (kv *keyValues) done() error {
	if kv.err != nil {
		return kv.err
	}
	if len(kv.m) > 0 {
		return fmt.Errorf("unknown option %q", slices.Sorted(maps.Keys(kv.m))[0])
	}
	return nil
}

func parseNet(args []string, n *netsim.LinkProfile) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	kv.span("latency", &n.Latency.Min, &n.Latency.Max)
	kv.tail("tail", &n.Latency)
	kv.float("loss", &n.Loss)
	kv.float("dup", &n.Duplicate)
	kv.float("reorder", &n.Reorder)
	var bw int
	kv.int("bandwidth", &bw)
	n.BytesPerSecond = int64(bw)
	return kv.done()
}

func parseDisk(args []string, d *DiskProfile) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	kv.span("sync", &d.SyncLatency.Min, &d.SyncLatency.Max)
	kv.tail("tail", &d.SyncLatency)
	kv.float("eio-sync", &d.SyncErrorRate)
	kv.float("eio-write", &d.WriteErrorRate)
	kv.float("eio-read", &d.ReadErrorRate)
	kv.float("torn", &d.TornChance)
	kv.float("reorder", &d.ReorderChance)
	kv.float("flip", &d.FlipChance)
	return kv.done()
}

func parseWorkload(args []string, wl *Workload) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	var window int
	kv.int("producers", &wl.Producers)
	kv.int("consumers", &wl.Consumers)
	kv.span("every", &wl.PublishEvery.Min, &wl.PublishEvery.Max)
	kv.tail("every-tail", &wl.PublishEvery)
	kv.int("payload", &wl.PayloadMax)
	kv.float("delay", &wl.DelayChance)
	kv.duration("delay-max", &wl.DelayMax)
	kv.float("ack", &wl.AckChance)
	kv.float("nack", &wl.NackChance)
	kv.duration("lease", &wl.Lease)
	kv.int("window", &window)
	kv.span("think", &wl.Think.Min, &wl.Think.Max)
	kv.tail("think-tail", &wl.Think)
	kv.duration("timeout", &wl.RequestTimeout)
	kv.duration("quiet", &wl.Quiet)
	kv.int("limit", &wl.PublishLimit)
	kv.duration("probe", &wl.ProbeAt)
	kv.duration("consume-at", &wl.ConsumeAt)
	if window < 0 || window > 1<<20 {
		return fmt.Errorf("window=%d: want 0 to %d", window, 1<<20)
	}
	wl.Window = uint32(window)
	return kv.done()
}

// parseFault reads one fault line: "at=T KIND [nN[->nM]] key=value...".
func parseFault(args []string) (Fault, error) {
	var f Fault
	if len(args) < 2 {
		return f, fmt.Errorf("want at=T and a kind")
	}
	at, ok := strings.CutPrefix(args[0], "at=")
	d, err := time.ParseDuration(at)
	if !ok || err != nil {
		return f, fmt.Errorf("%q: want at=DURATION first", args[0])
	}
	f.At = d
	if f.Kind, err = parseFaultKind(args[1]); err != nil {
		return f, err
	}
	rest := args[2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "n") && !strings.Contains(rest[0], "=") {
		if err := parseTarget(rest[0], &f); err != nil {
			return f, err
		}
		rest = rest[1:]
	}
	kv, err := parseKeyValues(rest)
	if err != nil {
		return f, err
	}
	kv.duration("for", &f.Length)
	kv.duration("extra", &f.Extra)
	kv.duration("by", &f.Extra)
	kv.int("hit", &f.Hit)
	kv.int("mode", &f.Hit)
	kv.int("frames", &f.Hit)
	if b, ok := kv.take("boundary"); ok {
		f.Boundary = b
	}
	if g, ok := kv.take("group"); ok && g != "" {
		for _, name := range strings.Split(g, ",") {
			i, err := parseNodeName(name)
			if err != nil {
				return f, err
			}
			f.Group = append(f.Group, i)
		}
	}
	return f, kv.done()
}

// parseTarget reads "nN" or "nN->nM" into a fault's node and peer.
func parseTarget(s string, f *Fault) error {
	from, to, arrow := strings.Cut(s, "->")
	i, err := parseNodeName(from)
	if err != nil {
		return err
	}
	f.Node = i
	if arrow {
		if f.Peer, err = parseNodeName(to); err != nil {
			return err
		}
	}
	return nil
}

// parseNodeName reads "nN" (1-based, as traces print it) into an index.
func parseNodeName(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "n"))
	if !strings.HasPrefix(s, "n") || err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a node name like n1", s)
	}
	return n - 1, nil
}

// Validate checks that a scenario can run: a cluster to run it on, phases
// of sensible length, and faults that name nodes the cluster has.
func (sc Scenario) Validate() error {
	switch {
	case sc.Nodes < 1 || sc.Nodes > 9:
		return fmt.Errorf("scenario: nodes=%d: want 1 to 9", sc.Nodes)
	case sc.Safety <= 0 || sc.Liveness <= 0:
		return fmt.Errorf("scenario: safety and liveness must be positive (got %v, %v)", sc.Safety, sc.Liveness)
	case sc.Detection > 2:
		return fmt.Errorf("scenario: detection=%d: want 1 (heartbeat) or 2 (eager)", sc.Detection)
	}
	for i, f := range sc.Faults {
		bad := f.Node < 0 || f.Node >= sc.Nodes || f.Peer < 0 || f.Peer >= sc.Nodes || f.At < 0 || f.Length < 0
		for _, g := range f.Group {
			bad = bad || g < 0 || g >= sc.Nodes
		}
		if bad {
			return fmt.Errorf("scenario: fault %d (%s) names a node outside n1..n%d or a negative time", i+1, faultText(f), sc.Nodes)
		}
		if f.Kind == FaultCrashAt && (f.Boundary == "" || f.Hit < 1) {
			return fmt.Errorf("scenario: fault %d (%s) needs a boundary and hit >= 1", i+1, faultText(f))
		}
		if (f.Kind == FaultLoseWrites || f.Kind == FaultMisdirect) && f.Hit < 1 {
			return fmt.Errorf("scenario: fault %d (%s) needs frames >= 1", i+1, faultText(f))
		}
	}
	if wl := sc.Workload; wl != nil && len(wl.Queues) == 0 && (wl.Producers > 0 || wl.Consumers > 0) {
		return fmt.Errorf("scenario: the workload has clients but no queue")
	}
	return nil
}

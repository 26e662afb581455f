package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/wire"
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

// duration reads a duration that cannot be negative: every duration of
// the net, disk and workload lines is a length or an offset from the
// start of the run.
func (kv *keyValues) duration(key string, dst *time.Duration) {
	if v, ok := kv.take(key); ok {
		d, err := parseLength(v)
		if err != nil {
			kv.fail(key, v, err)
		}
		*dst = d
	}
}

// chance reads a probability. Every float of the format is one, and a
// NaN would not even equal itself once read back.
func (kv *keyValues) chance(key string, dst *float64) {
	if v, ok := kv.take(key); ok {
		c, err := parseChance(v)
		if err != nil {
			kv.fail(key, v, err)
		}
		*dst = c
	}
}

// count reads an integer that cannot be negative.
func (kv *keyValues) count(key string, dst *int) {
	if v, ok := kv.take(key); ok {
		n, err := strconv.Atoi(v)
		if err == nil && n < 0 {
			err = fmt.Errorf("want 0 or more")
		}
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
		x, err1 := parseLength(a)
		y, err2 := parseLength(b)
		if !found || err1 != nil || err2 != nil {
			kv.fail(key, v, fmt.Errorf("want MIN..MAX durations, neither negative"))
		}
		*lo, *hi = x, y
	}
}

// tail reads "chance..max" into a latency's tail.
func (kv *keyValues) tail(key string, l *netsim.Latency) {
	if v, ok := kv.take(key); ok {
		a, b, found := strings.Cut(v, "..")
		c, err1 := parseChance(a)
		m, err2 := parseLength(b)
		if !found || err1 != nil || err2 != nil {
			kv.fail(key, v, fmt.Errorf("want CHANCE..MAX, a chance from 0 to 1 and a duration that is not negative"))
		}
		l.TailChance, l.TailMax = c, m
	}
}

// parseLength reads a duration that is not negative.
func parseLength(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = fmt.Errorf("want a duration that is not negative")
	}
	return d, err
}

// parseChance reads a probability: a finite float from 0 to 1, the only
// values the generator draws and the simulator can use.
func parseChance(v string) (float64, error) {
	c, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil:
		return 0, err
	case math.IsNaN(c) || c < 0 || c > 1: // the infinities are out of range too
		return 0, fmt.Errorf("want a chance from 0 to 1")
	case c == 0:
		return 0, nil // "-0" reads as a negative zero, which would print as "-0"
	}
	return c, nil
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
	kv.chance("loss", &n.Loss)
	kv.chance("dup", &n.Duplicate)
	kv.chance("reorder", &n.Reorder)
	var bw int
	kv.count("bandwidth", &bw)
	n.BytesPerSecond = int64(bw)
	return kv.done()
}

// parseCheckpoint reads a checkpoint directive: records=N, at least 1,
// and optionally bytes=B, segment=S and interval=D.
func parseCheckpoint(args []string, c *CheckpointCadence) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	var bytes, segment int
	kv.count("records", &c.Records)
	kv.count("bytes", &bytes)
	kv.count("segment", &segment)
	c.Bytes, c.Segment = int64(bytes), int64(segment)
	if v, ok := kv.take("interval"); ok {
		d, err := parseLength(v)
		if err != nil {
			kv.fail("interval", v, err)
		}
		c.Interval = d
	}
	if err := kv.done(); err != nil {
		return err
	}
	if c.Records <= 0 {
		return fmt.Errorf("checkpoint records=%d: want at least 1", c.Records)
	}
	if c.Segment != 0 && c.Segment < 1<<10 {
		return fmt.Errorf("checkpoint segment=%d: want 0 (the default) or at least 1024", c.Segment)
	}
	return nil
}

func parseDisk(args []string, d *DiskProfile) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	kv.span("sync", &d.SyncLatency.Min, &d.SyncLatency.Max)
	kv.tail("tail", &d.SyncLatency)
	kv.chance("eio-sync", &d.SyncErrorRate)
	kv.chance("eio-write", &d.WriteErrorRate)
	kv.chance("eio-read", &d.ReadErrorRate)
	kv.chance("eio-names", &d.NameErrorRate)
	kv.chance("torn", &d.TornChance)
	kv.chance("reorder", &d.ReorderChance)
	kv.chance("flip", &d.FlipChance)
	return kv.done()
}

func parseWorkload(args []string, wl *Workload) error {
	kv, err := parseKeyValues(args)
	if err != nil {
		return err
	}
	var window int
	kv.count("producers", &wl.Producers)
	kv.count("consumers", &wl.Consumers)
	kv.span("every", &wl.PublishEvery.Min, &wl.PublishEvery.Max)
	kv.tail("every-tail", &wl.PublishEvery)
	kv.count("payload", &wl.PayloadMax)
	kv.chance("delay", &wl.DelayChance)
	kv.duration("delay-max", &wl.DelayMax)
	kv.chance("ack", &wl.AckChance)
	kv.chance("nack", &wl.NackChance)
	kv.duration("lease", &wl.Lease)
	kv.count("window", &window)
	kv.span("think", &wl.Think.Min, &wl.Think.Max)
	kv.tail("think-tail", &wl.Think)
	kv.duration("timeout", &wl.RequestTimeout)
	kv.duration("quiet", &wl.Quiet)
	kv.count("limit", &wl.PublishLimit)
	kv.duration("probe", &wl.ProbeAt)
	kv.duration("consume-at", &wl.ConsumeAt)
	kv.duration("ack-linger", &wl.AckLinger)
	kv.chance("extend", &wl.ExtendChance)
	kv.chance("at-owner", &wl.AtOwnerChance)
	kv.duration("unsubscribe", &wl.UnsubscribeEvery)
	kv.count("purges", &wl.Purges)
	kv.count("moves", &wl.Moves)
	kv.count("dead-letter-changes", &wl.DeadLetterChanges)
	kv.count("bad-requests", &wl.BadRequests)
	kv.count("churn", &wl.Churn)
	if window < 0 || window > 1<<20 {
		return fmt.Errorf("window=%d: want 0 to %d", window, 1<<20)
	}
	if wl.Purges > maxPurges {
		return fmt.Errorf("purges=%d: want 0 to %d", wl.Purges, maxPurges)
	}
	if wl.Moves > maxMoves {
		return fmt.Errorf("moves=%d: want 0 to %d", wl.Moves, maxMoves)
	}
	if wl.DeadLetterChanges > maxDeadLetterChanges {
		return fmt.Errorf("dead-letter-changes=%d: want 0 to %d", wl.DeadLetterChanges, maxDeadLetterChanges)
	}
	if wl.Churn > maxChurn {
		return fmt.Errorf("churn=%d: want 0 to %d", wl.Churn, maxChurn)
	}
	if wl.BadRequests > maxBadRequests {
		return fmt.Errorf("bad-requests=%d: want 0 to %d", wl.BadRequests, maxBadRequests)
	}
	wl.Window = uint32(window)
	return kv.done()
}

// parseFault reads one fault line: "at=T KIND [nN[->nM]] key=value...".
// Each kind is written one way (see faultForms): it names a node, a link
// or neither, and takes exactly the keys it prints, each once. Anything
// else is refused, since a field the kind does not print would be lost
// the next time the scenario is saved, and a missing one would silently
// be zero.
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
	form := faultForms[f.Kind]
	rest, err := parseAim(form.aim, args[2:], &f)
	if err != nil {
		return f, fmt.Errorf("%s %v", f.Kind, err)
	}
	kv, err := parseKeyValues(rest)
	if err != nil {
		return f, err
	}
	for _, key := range form.keys {
		v, ok := kv.take(key)
		if !ok {
			return f, fmt.Errorf("%s needs %s= (it takes %s)", f.Kind, key, keyList(form.keys))
		}
		if err := setFaultValue(&f, key, v); err != nil {
			return f, fmt.Errorf("%s=%s: %v", key, v, err)
		}
	}
	for _, key := range optionalKeys[f.Kind] {
		if v, ok := kv.take(key); ok {
			if err := setFaultValue(&f, key, v); err != nil {
				return f, fmt.Errorf("%s=%s: %v", key, v, err)
			}
		}
	}
	if len(kv.m) > 0 {
		extra := slices.Sorted(maps.Keys(kv.m))[0]
		return f, fmt.Errorf("unknown option %q for %s (it takes %s)", extra, f.Kind, keyList(append(slices.Clone(form.keys), optionalKeys[f.Kind]...)))
	}
	return f, nil
}

// keyList writes a fault kind's keys as its line holds them.
func keyList(keys []string) string {
	return strings.Join(keys, "= ") + "="
}

// parseAim reads what a fault is aimed at, its first argument unless that
// is a key=value, and returns the arguments after it.
func parseAim(aim faultAim, args []string, f *Fault) ([]string, error) {
	var target string
	if len(args) > 0 && !strings.Contains(args[0], "=") {
		target, args = args[0], args[1:]
	}
	from, to, arrow := strings.Cut(target, "->")
	switch {
	case aim == aimNone && target != "":
		return nil, fmt.Errorf("is aimed at no node or link given on its line: remove %q", target)
	case aim == aimNode && (target == "" || arrow):
		return nil, fmt.Errorf("needs one node like n1 after the kind, got %q", target)
	case aim == aimLink && (target == "" || !arrow):
		return nil, fmt.Errorf("needs a link like n1->n2 after the kind, got %q", target)
	case aim == aimNone:
		return args, nil
	}
	var err error
	if f.Node, err = parseNodeName(from); err != nil {
		return nil, err
	}
	if aim == aimLink {
		if f.Peer, err = parseNodeName(to); err != nil {
			return nil, err
		}
		if f.Peer == f.Node {
			return nil, fmt.Errorf("needs a link between two nodes, got %q", target)
		}
	}
	return args, nil
}

// setFaultValue reads the value of one of a fault's keys into its field.
func setFaultValue(f *Fault, key, v string) error {
	var err error
	switch key {
	case "for":
		f.Length, err = parseLength(v)
	case "extra": // a spike adds latency; it cannot take any away
		f.Extra, err = parseLength(v)
	case "by": // a clock may jump either way
		f.Extra, err = time.ParseDuration(v)
	case "again": // written only when set, so never zero
		f.Extra, err = parseLength(v)
		if err == nil && f.Extra == 0 {
			err = fmt.Errorf("want a duration above zero")
		}
	case "hit", "frames", "consumer":
		f.Hit, err = strconv.Atoi(v)
		if err == nil && f.Hit < 1 {
			err = fmt.Errorf("want 1 or more")
		}
	case "mode":
		f.Hit, err = strconv.Atoi(v)
		if err == nil && f.Hit != 1 && f.Hit != 2 {
			err = fmt.Errorf("want 1 (heartbeat) or 2 (eager)")
		}
	case "files":
		f.Hit, err = parseReadClass(v)
	case "boundary":
		f.Boundary = v
		if v == "" {
			err = fmt.Errorf("want a boundary name")
		}
	case "group":
		f.Group, err = parseGroup(v)
	default:
		panic(fmt.Sprintf("sim: fault key %q has no field", key))
	}
	return err
}

// parseGroup reads "nA,nB,..." (possibly empty) into node indexes, in the
// order written. A node named twice is refused: the group is a set, and a
// line that names a node twice may mean a typo for another node.
func parseGroup(v string) ([]int, error) {
	if v == "" {
		return nil, nil
	}
	var group []int
	for _, name := range strings.Split(v, ",") {
		i, err := parseNodeName(name)
		if err != nil {
			return nil, err
		}
		if slices.Contains(group, i) {
			return nil, fmt.Errorf("%s is named twice", name)
		}
		group = append(group, i)
	}
	return group, nil
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
	procs := sc.Nodes + sc.Spares
	switch {
	case sc.Nodes < 1 || sc.Nodes > MaxNodes:
		return fmt.Errorf("scenario: nodes=%d: want 1 to %d", sc.Nodes, MaxNodes)
	case sc.Spares < 0 || procs > MaxNodes:
		return fmt.Errorf("scenario: spares=%d: want 0 or more, with at most %d processes in all", sc.Spares, MaxNodes)
	case sc.Safety <= 0 || sc.Liveness <= 0:
		return fmt.Errorf("scenario: safety and liveness must be positive (got %v, %v)", sc.Safety, sc.Liveness)
	case sc.Detection > 2:
		return fmt.Errorf("scenario: detection=%d: want 1 (heartbeat) or 2 (eager)", sc.Detection)
	case sc.Replicas < 0 || sc.Replicas > sc.Nodes:
		return fmt.Errorf("scenario: replicas=%d: want 1 to the %d founding nodes (0 for three)", sc.Replicas, sc.Nodes)
	}
	for i, f := range sc.Faults {
		bad := f.Node < 0 || f.Node >= procs || f.Peer < 0 || f.Peer >= procs || f.At < 0 || f.Length < 0
		for _, g := range f.Group {
			bad = bad || g < 0 || g >= procs
		}
		if bad {
			return fmt.Errorf("scenario: fault %d (%s) names a node outside n1..n%d or a negative time", i+1, faultText(f), procs)
		}
		if err := sc.validateMembershipFault(f); err != nil {
			return fmt.Errorf("scenario: fault %d (%s) %v", i+1, faultText(f), err)
		}
		if f.Kind == FaultCrashAt && (f.Boundary == "" || f.Hit < 1) {
			return fmt.Errorf("scenario: fault %d (%s) needs a boundary and hit >= 1", i+1, faultText(f))
		}
		if f.Kind == FaultCrashAtStep && f.Boundary == "" {
			return fmt.Errorf("scenario: fault %d (%s) needs a boundary", i+1, faultText(f))
		}
		if f.Kind == FaultRestartEIO && (f.Hit < int(readWindow) || f.Hit >= int(readClassEnd)) {
			return fmt.Errorf("scenario: fault %d (%s) needs files= one of window, log, state, meta", i+1, faultText(f))
		}
		if (f.Kind == FaultLoseWrites || f.Kind == FaultMisdirect) && f.Hit < 1 {
			return fmt.Errorf("scenario: fault %d (%s) needs frames >= 1", i+1, faultText(f))
		}
	}
	if wl := sc.Workload; wl != nil && len(wl.Queues) == 0 && (wl.Producers > 0 || wl.Consumers > 0) {
		return fmt.Errorf("scenario: the workload has clients but no queue")
	}
	return sc.validateDedup()
}

// validateDedup checks the deduplication windows against the bounds the
// nodes enforce, so a scenario fails here rather than in a node.
func (sc Scenario) validateDedup() error {
	if err := wire.CheckDedupWindow(sc.Dedup); err != nil {
		return fmt.Errorf("scenario: dedup: %v", err)
	}
	if sc.Workload == nil {
		return nil
	}
	if len(sc.Workload.Queues) > 0 && sc.Workload.Queues[0].MovesOnly {
		// Producers publish to the first queue in place of a moves-only
		// one, and the probe clients use it.
		return fmt.Errorf("scenario: queue %s: the first queue takes publishes, it cannot be moves-only", sc.Workload.Queues[0].Name)
	}
	for _, q := range sc.Workload.Queues {
		if err := wire.CheckDedupWindow(q.Dedup); err != nil {
			return fmt.Errorf("scenario: queue %s: %v", q.Name, err)
		}
		if err := wire.CheckDeadLetter(q.Name, q.DeadLetter, q.MaxDeliveries); err != nil {
			return fmt.Errorf("scenario: queue %s: %v", q.Name, err)
		}
		// The simulated clients create only the workload's queues: a
		// dead-letter queue outside it would never exist, and its
		// messages would wait for it to the end of the run.
		if q.DeadLetter != "" && !slices.ContainsFunc(sc.Workload.Queues, func(o QueueSpec) bool { return o.Name == q.DeadLetter }) {
			return fmt.Errorf("scenario: queue %s: dead-letter queue %s is not a queue of the workload", q.Name, q.DeadLetter)
		}
	}
	return nil
}

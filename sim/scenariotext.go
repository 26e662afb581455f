package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairnmq/cairn/netsim"
	"github.com/cairnmq/cairn/wire"
)

// The scenario text format: one directive per line, '#' starts a comment,
// blank lines are ignored. Every value a run depends on is written out,
// so a scenario file is the whole input of a run and can be edited by
// hand: delete a fault line and the run loses exactly that fault.
//
//	seed 42
//	nodes 3
//	safety 8s
//	liveness 8s
//	detection 1
//	interval 40ms
//	refusals on
//	net latency=100µs..2ms tail=0.05..145ms loss=0.01 dup=0 reorder=0.02 bandwidth=0
//	disk sync=88µs..2ms tail=0.01..46ms eio-sync=0.002 eio-write=0 eio-read=0 torn=0.5 reorder=0.3 flip=0
//	skew 250ms
//	classes crash,pause,crash-leader
//	dedup 1s
//	quota 196608
//	rest 400ms
//	checkpoint records=40 bytes=0 segment=4096
//	workload producers=2 consumers=1 every=2ms..15ms payload=512 ...
//	queue q0 majority
//	fault at=1.2s crash n2 for=300ms
//	expect recovery.done
//
// Durations use Go's notation and floats the shortest form that reads
// back exactly, so formatting and parsing round-trip bit for bit.

// MarshalText writes the scenario in the text format.
func (sc Scenario) MarshalText() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "seed %d\nnodes %d\n", sc.Seed, sc.Nodes)
	if sc.Spares != 0 {
		// Written only when set, so scenarios saved before spares
		// existed read back as they were.
		fmt.Fprintf(&b, "spares %d\n", sc.Spares)
	}
	fmt.Fprintf(&b, "safety %v\nliveness %v\ndetection %d\n", sc.Safety, sc.Liveness, sc.Detection)
	if sc.DetectionInterval != 0 {
		fmt.Fprintf(&b, "interval %v\n", sc.DetectionInterval)
	}
	if sc.Refusals {
		b.WriteString("refusals on\n")
	}
	if sc.Swarm.Profile != "" {
		fmt.Fprintf(&b, "profile %s\n", sc.Swarm.Profile)
	}
	n := sc.Swarm.Net
	fmt.Fprintf(&b, "net latency=%s tail=%s loss=%s dup=%s reorder=%s bandwidth=%d\n",
		spanText(n.Latency.Min, n.Latency.Max), tailText(n.Latency), floatText(n.Loss), floatText(n.Duplicate),
		floatText(n.Reorder), n.BytesPerSecond)
	d := sc.Swarm.Disk
	fmt.Fprintf(&b, "disk sync=%s tail=%s eio-sync=%s eio-write=%s eio-read=%s torn=%s reorder=%s flip=%s",
		spanText(d.SyncLatency.Min, d.SyncLatency.Max), tailText(d.SyncLatency), floatText(d.SyncErrorRate),
		floatText(d.WriteErrorRate), floatText(d.ReadErrorRate), floatText(d.TornChance), floatText(d.ReorderChance),
		floatText(d.FlipChance))
	if d.NameErrorRate != 0 {
		// Written only when drawn, so every scenario from before the
		// rate reads and prints as it did.
		fmt.Fprintf(&b, " eio-names=%s", floatText(d.NameErrorRate))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "skew %v\n", sc.Swarm.ClockMax)
	names := make([]string, len(sc.Swarm.Classes))
	for i, k := range sc.Swarm.Classes {
		names[i] = k.String()
	}
	fmt.Fprintf(&b, "classes %s\n", strings.Join(names, ","))
	if sc.Dedup != 0 {
		fmt.Fprintf(&b, "dedup %v\n", sc.Dedup)
	}
	if sc.Quota != 0 {
		fmt.Fprintf(&b, "quota %d\n", sc.Quota)
	}
	if sc.RestAfter != 0 {
		fmt.Fprintf(&b, "rest %v\n", sc.RestAfter)
	}
	if sc.Replicas != 0 {
		fmt.Fprintf(&b, "replicas %d\n", sc.Replicas)
	}
	if c := sc.Checkpoint; c.Records != 0 {
		fmt.Fprintf(&b, "checkpoint records=%d bytes=%d segment=%d", c.Records, c.Bytes, c.Segment)
		if c.Interval != 0 {
			fmt.Fprintf(&b, " interval=%v", c.Interval)
		}
		b.WriteByte('\n')
	}
	if wl := sc.Workload; wl != nil {
		fmt.Fprintf(&b, "workload producers=%d consumers=%d every=%s every-tail=%s payload=%d delay=%s delay-max=%v ack=%s nack=%s lease=%v window=%d think=%s think-tail=%s timeout=%v quiet=%v limit=%d probe=%v consume-at=%v\n",
			wl.Producers, wl.Consumers, spanText(wl.PublishEvery.Min, wl.PublishEvery.Max), tailText(wl.PublishEvery),
			wl.PayloadMax, floatText(wl.DelayChance), wl.DelayMax, floatText(wl.AckChance), floatText(wl.NackChance),
			wl.Lease, wl.Window, spanText(wl.Think.Min, wl.Think.Max), tailText(wl.Think), wl.RequestTimeout, wl.Quiet,
			wl.PublishLimit, wl.ProbeAt, wl.ConsumeAt)
		// The keys added since the line's first form are written only when
		// set, so scenarios saved before each one still read back as they
		// were: each goes before the line's newline.
		b.Truncate(b.Len() - 1)
		for _, k := range []struct {
			set  bool
			text string
		}{
			{wl.AckLinger != 0, fmt.Sprintf(" ack-linger=%v", wl.AckLinger)},
			{wl.ExtendChance != 0, " extend=" + floatText(wl.ExtendChance)},
			{wl.AtOwnerChance != 0, " at-owner=" + floatText(wl.AtOwnerChance)},
			{wl.UnsubscribeEvery != 0, fmt.Sprintf(" unsubscribe=%v", wl.UnsubscribeEvery)},
			{wl.Purges != 0, fmt.Sprintf(" purges=%d", wl.Purges)},
			{wl.Moves != 0, fmt.Sprintf(" moves=%d", wl.Moves)},
			{wl.DeadLetterChanges != 0, fmt.Sprintf(" dead-letter-changes=%d", wl.DeadLetterChanges)},
			{wl.BadRequests != 0, fmt.Sprintf(" bad-requests=%d", wl.BadRequests)},
			{wl.Churn != 0, fmt.Sprintf(" churn=%d", wl.Churn)},
		} {
			if k.set {
				b.WriteString(k.text)
			}
		}
		b.WriteByte('\n')
		for _, q := range wl.Queues {
			fmt.Fprintf(&b, "queue %s %s", q.Name, q.Policy)
			if q.Dedup != 0 {
				fmt.Fprintf(&b, " dedup=%v", q.Dedup)
			}
			if q.DeadLetter != "" {
				fmt.Fprintf(&b, " dead-letter=%s max-deliveries=%d", q.DeadLetter, q.MaxDeliveries)
			}
			if q.MovesOnly {
				b.WriteString(" moves-only")
			}
			b.WriteByte('\n')
		}
	}
	for _, f := range sc.Faults {
		fmt.Fprintf(&b, "fault %s\n", faultText(f))
	}
	for _, e := range sc.Expect {
		fmt.Fprintf(&b, "expect %s\n", e)
	}
	return b.Bytes(), nil
}

// faultAim is what a fault line names after its kind.
type faultAim int

const (
	aimNone faultAim = iota // nothing: a role, the whole cluster, or a group= key
	aimNode                 // one node, "nN"
	aimLink                 // one direction of a link, "nN->nM"
)

// faultForm is how one kind of fault is written: what it is aimed at and
// the keys it takes, in the order they print. The printer and the parser
// both follow this table, so a line the parser accepts is a line the
// printer writes, and a field a kind ignores cannot be set by hand only
// to vanish when the scenario is saved again.
type faultForm struct {
	aim  faultAim
	keys []string
}

var faultForms = [faultKinds]faultForm{
	FaultCrash:            {aimNode, []string{"for"}},
	FaultCrashAt:          {aimNode, []string{"boundary", "hit", "for"}},
	FaultPause:            {aimNode, []string{"for"}},
	FaultIsolate:          {aimNode, []string{"for"}},
	FaultOneWay:           {aimLink, []string{"for"}},
	FaultSplit:            {aimNone, []string{"group", "for"}},
	FaultClog:             {aimLink, []string{"for"}},
	FaultSpike:            {aimLink, []string{"extra", "for"}},
	FaultClockJump:        {aimNode, []string{"by"}},
	FaultCrashLeader:      {aimNone, []string{"for"}},
	FaultIsolateLeader:    {aimNone, []string{"for"}},
	FaultCrashAll:         {aimNone, []string{"for"}},
	FaultCrashLeaderOwner: {aimNone, []string{"for"}},
	FaultSetDetection:     {aimNone, []string{"mode"}},
	FaultLossy:            {aimNode, []string{"for"}},
	FaultCrashOwner:       {aimNone, []string{"for"}},
	FaultDamage:           {aimNode, []string{"for"}},
	FaultLoseWrites:       {aimNode, []string{"frames", "for"}},
	FaultMisdirect:        {aimNode, []string{"frames", "for"}},
	FaultRestartConsumer:  {aimNone, []string{"consumer", "for"}},
	FaultVanishConsumer:   {aimNone, []string{"consumer", "for"}},
	FaultIsolateOwner:     {aimNone, []string{"for"}},
	FaultStop:             {aimNode, []string{"for"}},
	FaultAddNode:          {aimNode, nil},
	FaultRemoveNode:       {aimNode, nil},
	FaultRebalance:        {aimNone, nil},
	FaultRot:              {aimNode, nil},
	FaultStall:            {aimNone, []string{"for"}},
	FaultPauseOwner:       {aimNone, []string{"for"}},
	FaultDamageState:      {aimNode, []string{"for"}},
	FaultTruncate:         {aimNode, []string{"for"}},
	FaultLoseDisk:         {aimNode, []string{"for"}},

	FaultIsolateRestingOwner: {aimNone, []string{"for"}},
	FaultRestartEIO:          {aimNode, []string{"files", "for"}},
	FaultStackLoss:           {aimNone, []string{"for"}},
	FaultCrashAtStep:         {aimNone, []string{"boundary", "for"}},
}

// optionalKeys are keys a kind takes only when they are set, written
// only then: a membership change asked for a second time says how long
// after the first (again=), and scenarios written before there was such
// a repeat read as they did.
var optionalKeys = map[FaultKind][]string{
	FaultAddNode:    {"again"},
	FaultRemoveNode: {"again"},
}

// formOf returns the form of kind. A kind outside the table (only code
// can make one) prints as a role fault with its length, so a report
// about a bad scenario can still show it.
func formOf(kind FaultKind) faultForm {
	if kind < 0 || kind >= faultKinds {
		return faultForm{aimNone, []string{"for"}}
	}
	return faultForms[kind]
}

// faultText writes one fault with exactly the fields its kind uses.
func faultText(f Fault) string {
	var b strings.Builder
	fmt.Fprintf(&b, "at=%v %s", f.At, f.Kind)
	form := formOf(f.Kind)
	switch form.aim {
	case aimNode:
		fmt.Fprintf(&b, " n%d", f.Node+1)
	case aimLink:
		fmt.Fprintf(&b, " n%d->n%d", f.Node+1, f.Peer+1)
	}
	for _, key := range form.keys {
		fmt.Fprintf(&b, " %s=%s", key, faultValue(f, key))
	}
	for _, key := range optionalKeys[f.Kind] {
		if faultValueSet(f, key) {
			fmt.Fprintf(&b, " %s=%s", key, faultValue(f, key))
		}
	}
	return b.String()
}

// faultValueSet reports whether the optional field key names holds a
// value to write.
func faultValueSet(f Fault, key string) bool {
	switch key {
	case "again":
		return f.Extra > 0
	}
	panic(fmt.Sprintf("sim: fault key %q is not optional", key))
}

// faultValue writes the field of f that key names.
func faultValue(f Fault, key string) string {
	switch key {
	case "for":
		return f.Length.String()
	case "extra", "by", "again":
		return f.Extra.String()
	case "hit", "mode", "frames", "consumer":
		return strconv.Itoa(f.Hit)
	case "boundary":
		return f.Boundary
	case "files":
		return readClass(f.Hit).String()
	case "group":
		group := make([]string, len(f.Group))
		for i, g := range f.Group {
			group[i] = fmt.Sprintf("n%d", g+1)
		}
		return strings.Join(group, ",")
	}
	panic(fmt.Sprintf("sim: fault key %q has no field", key))
}

func spanText(lo, hi time.Duration) string { return fmt.Sprintf("%v..%v", lo, hi) }

func tailText(l netsim.Latency) string { return floatText(l.TailChance) + ".." + l.TailMax.String() }

func floatText(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ParseScenario reads a scenario in the text format. Errors name the line
// and what was wrong with it.
func ParseScenario(text []byte) (Scenario, error) {
	var sc Scenario
	p := scenarioParser{sc: &sc}
	sn := bufio.NewScanner(bytes.NewReader(text))
	sn.Buffer(nil, 1<<20)
	for line := 1; sn.Scan(); line++ {
		s, _, _ := strings.Cut(sn.Text(), "#")
		fields := strings.Fields(s)
		if len(fields) == 0 {
			continue
		}
		if err := p.directive(fields); err != nil {
			return Scenario{}, fmt.Errorf("scenario line %d (%s): %w", line, strings.TrimSpace(s), err)
		}
	}
	if err := sn.Err(); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// scenarioParser fills a scenario one directive at a time.
type scenarioParser struct {
	sc *Scenario
}

func (p *scenarioParser) directive(fields []string) error {
	sc, args := p.sc, fields[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("want one value, got %d", len(args))
		}
		return args[0], nil
	}
	switch fields[0] {
	case "profile":
		v, err := one()
		sc.Swarm.Profile = v
		return err
	case "refusals":
		v, err := one()
		if err == nil && v != "on" {
			err = fmt.Errorf("want on, got %q", v)
		}
		sc.Refusals = err == nil
		return err
	case "seed", "nodes", "spares", "detection", "interval", "safety", "liveness", "skew", "dedup", "quota", "rest", "replicas":
		v, err := one()
		if err != nil {
			return err
		}
		return p.scalar(fields[0], v)
	case "net":
		return parseNet(args, &sc.Swarm.Net)
	case "disk":
		return parseDisk(args, &sc.Swarm.Disk)
	case "classes":
		return p.classes(args)
	case "checkpoint":
		return parseCheckpoint(args, &sc.Checkpoint)
	case "workload":
		if sc.Workload == nil {
			sc.Workload = &Workload{}
		}
		return parseWorkload(args, sc.Workload)
	case "queue":
		return p.queue(args)
	case "expect":
		e, err := one()
		if err != nil {
			return err
		}
		sc.Expect = append(sc.Expect, e)
		return nil
	case "fault":
		f, err := parseFault(args)
		if err != nil {
			return err
		}
		sc.Faults = append(sc.Faults, f)
		return nil
	}
	return fmt.Errorf("unknown directive %q", fields[0])
}

func (p *scenarioParser) scalar(name, v string) error {
	sc := p.sc
	var err error
	switch name {
	case "seed":
		sc.Seed, err = strconv.ParseUint(v, 10, 64)
	case "nodes":
		sc.Nodes, err = strconv.Atoi(v)
	case "spares":
		sc.Spares, err = strconv.Atoi(v)
	case "detection":
		var d uint64
		d, err = strconv.ParseUint(v, 10, 8)
		sc.Detection = uint8(d)
	case "interval":
		sc.DetectionInterval, err = time.ParseDuration(v)
		if err == nil && sc.DetectionInterval < 10*time.Millisecond {
			err = fmt.Errorf("want 10ms or more")
		}
	case "safety":
		sc.Safety, err = time.ParseDuration(v)
	case "liveness":
		sc.Liveness, err = time.ParseDuration(v)
	case "skew": // a bound on skew either way, so never negative
		sc.Swarm.ClockMax, err = parseLength(v)
	case "dedup":
		if sc.Dedup, err = parseLength(v); err == nil {
			err = wire.CheckDedupWindow(sc.Dedup)
		}
	case "rest":
		sc.RestAfter, err = time.ParseDuration(v)
		if err == nil && sc.RestAfter == 0 {
			err = fmt.Errorf("want a duration, or a negative one for owners that never rest")
		}
	case "replicas":
		sc.Replicas, err = strconv.Atoi(v)
		if err == nil && sc.Replicas < 1 {
			err = fmt.Errorf("want 1 or more")
		}
	case "quota":
		sc.Quota, err = strconv.ParseInt(v, 10, 64)
		if err == nil && sc.Quota < 0 {
			err = fmt.Errorf("want a byte count, 0 or more")
		}
	}
	return err
}

func (p *scenarioParser) classes(args []string) error {
	p.sc.Swarm.Classes = nil
	if len(args) == 0 {
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("want one comma-separated list")
	}
	for _, name := range strings.Split(args[0], ",") {
		k, err := parseFaultKind(name)
		if err != nil {
			return err
		}
		p.sc.Swarm.Classes = append(p.sc.Swarm.Classes, k)
	}
	return nil
}

func (p *scenarioParser) queue(args []string) error {
	if p.sc.Workload == nil {
		return fmt.Errorf("a queue line must follow the workload line")
	}
	if len(args) < 2 {
		return fmt.Errorf("want a name, a policy and optionally dedup=D, dead-letter=Q, max-deliveries=N and moves-only")
	}
	policy, err := wire.ParsePolicy(args[1])
	if err != nil {
		return err
	}
	q := QueueSpec{Name: args[0], Policy: policy}
	for _, arg := range args[2:] {
		key, v, _ := strings.Cut(arg, "=")
		switch key {
		case "dedup":
			if q.Dedup, err = parseLength(v); err == nil {
				err = wire.CheckDedupWindow(q.Dedup)
			}
		case "dead-letter":
			q.DeadLetter = v
		case "moves-only":
			if v != "" {
				err = fmt.Errorf("takes no value")
			}
			q.MovesOnly = true
		case "max-deliveries":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			q.MaxDeliveries = uint32(n)
		default:
			return fmt.Errorf("%q: want dedup=D, dead-letter=Q, max-deliveries=N or moves-only", arg)
		}
		if err != nil {
			return fmt.Errorf("%q: %v", arg, err)
		}
	}
	if err := wire.CheckDeadLetter(q.Name, q.DeadLetter, q.MaxDeliveries); err != nil {
		return err
	}
	p.sc.Workload.Queues = append(p.sc.Workload.Queues, q)
	return nil
}

func parseFaultKind(name string) (FaultKind, error) {
	for k := FaultKind(0); k < faultKinds; k++ {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown fault kind %q", name)
}

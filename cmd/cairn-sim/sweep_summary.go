package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cairnmq/cairn/props"
	"github.com/cairnmq/cairn/sim"
)

// summaryFormat names the JSON layout, so a merge refuses files it does
// not understand instead of summing them wrongly.
const summaryFormat = "cairn-sim sweep summary v1"

// sweepSummary is everything a sweep (or a merge of sweeps) reports. It
// holds sums only, so summaries of disjoint seed ranges add up to the
// summary of their union whatever the order.
type sweepSummary struct {
	Format string `json:"format"`
	// Ranges are the seed ranges covered, ascending and disjoint.
	Ranges    []seedSpan    `json:"ranges"`
	Seeds     int           `json:"seeds"`
	Safety    int           `json:"safety_violations"`
	Liveness  int           `json:"liveness_failures"`
	Crashes   int           `json:"simulator_crashes"`
	Events    int           `json:"events"`
	Simulated time.Duration `json:"simulated_ns"`
	// Wall is the sweep's wall time; in a merge, the longest part's,
	// since shards run side by side.
	Wall     time.Duration `json:"wall_ns"`
	Stats    props.Stats   `json:"stats"`
	Failures []failure     `json:"failures"`
	// Probes tallies each "sometimes" probe: seeds that reached it, and
	// how often in all.
	Probes map[string]tally `json:"probes"`
	// Faults counts, per fault kind, the seeds that scheduled one.
	Faults map[string]int `json:"faults"`
	// Boundaries is the full boundary × fault matrix.
	Boundaries map[string]*boundaryTally `json:"boundaries"`
	// Reassign counts, per detection mode, the reassignments planned
	// while it was in force, the unprovoked ones among them, and the
	// seeds that started in it.
	Reassign reassignCounts `json:"reassignments"`
}

// seedSpan is an inclusive range of seeds.
type seedSpan struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// failure is one failing seed, with the line that replays it.
type failure struct {
	Seed uint64 `json:"seed"`
	// Kind is safety, liveness or simulator-crash.
	Kind string `json:"kind"`
	// Problems are the first lines of the violations, or of the crash.
	Problems []string `json:"problems"`
	Replay   string   `json:"replay"`
}

// tally counts seeds that saw something, and how often it happened.
type tally struct {
	Seeds int `json:"seeds"`
	Count int `json:"count"`
}

// boundaryTally is one row of the matrix: seeds and hits of a boundary,
// and per fault kind (or "none") the seeds and hits within the window
// after such a fault.
type boundaryTally struct {
	Seeds int              `json:"seeds"`
	Hits  int              `json:"hits"`
	Near  map[string]tally `json:"near"`
}

func newSweepSummary() *sweepSummary {
	s := &sweepSummary{Format: summaryFormat, Ranges: []seedSpan{}, Failures: []failure{}, Probes: make(map[string]tally),
		Faults: make(map[string]int), Boundaries: make(map[string]*boundaryTally), Reassign: make(reassignCounts)}
	for _, p := range sim.Probes {
		s.Probes[p.Name] = tally{}
	}
	return s
}

// add counts one seed; a failing seed is printed to w at once, with its
// replay line and scenario, exactly as run prints it.
func (s *sweepSummary) add(rep seedReport, w io.Writer) {
	o := rep.outcome()
	// summary.add is the one place that decides what kind of failure an
	// outcome is; use it rather than repeat the rules.
	var one summary
	one.add(o)
	s.addCounts(one)
	if o.crash != "" || o.res.Failed() {
		printOutcome(w, o, "")
		s.Failures = append(s.Failures, newFailure(o, one))
	}
	for name, n := range rep.Coverage.Probes {
		s.Probes[name] = tally{s.Probes[name].Seeds + 1, s.Probes[name].Count + n}
	}
	for kind := range rep.Faults {
		s.Faults[kind]++
	}
	s.Reassign.addSeed(rep.Seed, rep.Detection, rep.Reassign)
	for name, hits := range rep.Coverage.Hits {
		row := s.row(name)
		row.Seeds++
		row.Hits += hits
		for kind, n := range rep.Coverage.Near[name] {
			row.Near[kind] = tally{row.Near[kind].Seeds + 1, row.Near[kind].Count + n}
		}
	}
}

func (s *sweepSummary) row(name string) *boundaryTally {
	if s.Boundaries[name] == nil {
		s.Boundaries[name] = &boundaryTally{Near: make(map[string]tally)}
	}
	return s.Boundaries[name]
}

func newFailure(o outcome, one summary) failure {
	f := failure{Seed: o.res.Seed, Replay: fmt.Sprintf("cairn-sim replay --seed %d --trace trace-%d.txt", o.res.Seed, o.res.Seed)}
	switch {
	case one.crashes > 0:
		f.Kind = "simulator-crash"
		f.Problems = []string{firstLine(o.crash)}
	case one.safety > 0:
		f.Kind = "safety"
	default:
		f.Kind = "liveness"
	}
	for _, v := range o.res.Violations {
		f.Problems = append(f.Problems, firstLine(v.String()))
	}
	return f
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (s *sweepSummary) addCounts(o summary) {
	s.Seeds += o.seeds
	s.Safety += o.safety
	s.Liveness += o.liveness
	s.Crashes += o.crashes
	s.Events += o.events
	s.Simulated += o.simTime
	addInts(&s.Stats, o.stats)
}

// addInts adds every int field of src into dst. Summaries sum props.Stats
// this way so that a counter added to it later is merged too, without a
// field list here to forget.
func addInts[T any](dst *T, src T) {
	d, v := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range d.NumField() {
		if f := d.Field(i); f.Kind() == reflect.Int && f.CanSet() {
			f.SetInt(f.Int() + v.Field(i).Int())
		}
	}
}

// toSummary is the run.go summary of these counts, for its one-line
// print and its exit code.
func (s *sweepSummary) toSummary() summary {
	return summary{seeds: s.Seeds, safety: s.Safety, liveness: s.Liveness, crashes: s.Crashes,
		events: s.Events, simTime: s.Simulated, stats: s.Stats, reassign: s.Reassign}
}

// merge adds another summary of a disjoint seed range.
func (s *sweepSummary) merge(o *sweepSummary) {
	s.Ranges = append(s.Ranges, o.Ranges...)
	s.Seeds += o.Seeds
	s.Safety += o.Safety
	s.Liveness += o.Liveness
	s.Crashes += o.Crashes
	s.Events += o.Events
	s.Simulated += o.Simulated
	s.Wall = max(s.Wall, o.Wall)
	addInts(&s.Stats, o.Stats)
	s.Failures = append(s.Failures, o.Failures...)
	slices.SortFunc(s.Failures, func(a, b failure) int { return cmp.Compare(a.Seed, b.Seed) })
	for name, t := range o.Probes {
		s.Probes[name] = tally{s.Probes[name].Seeds + t.Seeds, s.Probes[name].Count + t.Count}
	}
	for kind, n := range o.Faults {
		s.Faults[kind] += n
	}
	s.Reassign.merge(o.Reassign)
	for name, b := range o.Boundaries {
		row := s.row(name)
		row.Seeds += b.Seeds
		row.Hits += b.Hits
		for kind, t := range b.Near {
			row.Near[kind] = tally{row.Near[kind].Seeds + t.Seeds, row.Near[kind].Count + t.Count}
		}
	}
}

// checkRanges sorts the ranges and fails if two overlap: their seeds
// would be counted twice.
func (s *sweepSummary) checkRanges() error {
	slices.SortFunc(s.Ranges, func(a, b seedSpan) int { return cmp.Compare(a.First, b.First) })
	for i := 1; i < len(s.Ranges); i++ {
		if a, b := s.Ranges[i-1], s.Ranges[i]; b.First <= a.Last {
			return fmt.Errorf("seed ranges %d-%d and %d-%d overlap: the same seeds would count twice", a.First, a.Last, b.First, b.Last)
		}
	}
	return nil
}

// coveredText describes the seeds covered, naming any gaps between the
// parts, which is how a lost shard shows up.
func (s *sweepSummary) coveredText() string {
	if len(s.Ranges) == 0 {
		return "no seeds"
	}
	var parts, gaps []string
	cur := s.Ranges[0]
	flush := func() { parts = append(parts, fmt.Sprintf("%d-%d", cur.First, cur.Last)) }
	for _, r := range s.Ranges[1:] {
		if r.First == cur.Last+1 {
			cur.Last = r.Last
			continue
		}
		gaps = append(gaps, fmt.Sprintf("%d-%d", cur.Last+1, r.First-1))
		flush()
		cur = r
	}
	flush()
	text := "seeds " + strings.Join(parts, ", ")
	if len(gaps) > 0 {
		text += " (MISSING " + strings.Join(gaps, ", ") + ")"
	}
	return text
}

func (s *sweepSummary) writeFile(path string) error {
	data, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func readSummary(path string) (*sweepSummary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := newSweepSummary()
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Format != summaryFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", path, s.Format, summaryFormat)
	}
	return s, nil
}

// cmdSweepMerge sums the JSON summaries of sweeps over disjoint seed
// ranges (the shards of one sweep) and reports the whole.
func cmdSweepMerge(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("sweep-merge", stderr)
	jsonPath := fs.String("json", "", "also write the merged summary here")
	rows := fs.Int("rows", 12, "boundary rows in the printed coverage table")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return 0, usageError{"sweep-merge needs the summary files to merge"}
	}
	total := newSweepSummary()
	for _, path := range fs.Args() {
		s, err := readSummary(path)
		if err != nil {
			return 0, usageError{err.Error()}
		}
		total.merge(s)
	}
	if err := total.checkRanges(); err != nil {
		return 0, usageError{err.Error()}
	}
	for _, f := range total.Failures {
		fmt.Fprintf(stdout, "seed=%d %s: %s\n  replay: %s\n", f.Seed, strings.ToUpper(f.Kind), strings.Join(f.Problems, "; "), f.Replay)
	}
	fmt.Fprintf(stdout, "merged %d summaries: %s\n", fs.NArg(), total.coveredText())
	total.printReport(stdout, *rows)
	if *jsonPath != "" {
		if err := total.writeFile(*jsonPath); err != nil {
			return 0, err
		}
	}
	ret := total.toSummary()
	return ret.exitCode(), nil
}

// sortedKeys returns a map's keys in order, for stable printing.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

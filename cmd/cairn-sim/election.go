package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/cairnmq/cairn/latency"
	"github.com/cairnmq/cairn/node"
	"github.com/cairnmq/cairn/trials"
)

// cmdElectionReport measures metadata elections after a leader crash, per
// detection mode, in virtual time.
func cmdElectionReport(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("election-report", stderr)
	seeds := fs.String("seeds", "1-200", "seeds to run, A-B")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "seeds run in parallel")
	if err := fs.Parse(args); err != nil {
		return 0, usageError{err.Error()}
	}
	r, err := parseSeeds("", *seeds)
	if err != nil {
		return 0, err
	}
	code := exitOK
	for _, mode := range []struct {
		name string
		mode uint8
	}{{"heartbeat", node.DetectHeartbeat}, {"eager", node.DetectEager}} {
		measured := electionTrials(r, mode.mode, *workers)
		var lat []time.Duration
		var unelected []string
		failed, suspicions, falses, broken := 0, 0, 0, 0
		for _, t := range measured {
			switch {
			case len(t.Violations) > 0:
				broken++
				fmt.Fprintf(stdout, "  seed %d broke a promise: %s\n", t.Seed, t.Violations[0])
			case !t.Elected:
				failed++
				unelected = append(unelected, fmt.Sprint(t.Seed))
			default:
				lat = append(lat, t.Latency)
			}
			suspicions += t.Suspicions
			falses += t.False
		}
		d := latency.Summarize(lat)
		fmt.Fprintf(stdout, "%-9s leader loss -> new leader: n=%d median=%v p95=%v max=%v; no leader elected: %d; violations: %d; suspicions %d, false %d\n",
			mode.name, d.N, d.Median.Round(time.Millisecond), d.P95.Round(time.Millisecond), d.Max.Round(time.Millisecond), failed, broken, suspicions, falses)
		fmt.Fprintf(stdout, "          slowest: %s\n", slowest(measured, 3))
		if len(unelected) > 0 {
			fmt.Fprintf(stdout, "          no new leader: seeds %s\n", strings.Join(unelected, ", "))
		}
		if broken > 0 {
			code = exitSafety
		}
	}
	return code, nil
}

func electionTrials(r seedRange, mode uint8, workers int) []trials.ElectionTrial {
	out := make([]trials.ElectionTrial, r.count())
	var next atomic.Int64
	var wg conc.WaitGroup
	for range min(workers, r.count()) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(out)) {
					return
				}
				out[i] = trials.RunElectionTrial(r.first+uint64(i), mode)
			}
		})
	}
	wg.Wait()
	return out
}

// slowest names the seeds with the longest elections, to replay them.
func slowest(measured []trials.ElectionTrial, n int) string {
	sorted := slices.Clone(measured)
	slices.SortFunc(sorted, func(a, b trials.ElectionTrial) int { return cmp.Compare(b.Latency, a.Latency) })
	var parts []string
	for _, t := range sorted[:min(n, len(sorted))] {
		parts = append(parts, fmt.Sprintf("seed %d (%v)", t.Seed, t.Latency.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

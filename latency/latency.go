// Package latency summarizes measured durations, one way for every
// report: the simulated failover and election reports and the benchmarks
// against real processes compute their medians and percentiles here, so
// their figures can be compared.
//
// Percentiles use the nearest-rank method: the p-th percentile is the
// smallest value with at least p% of the values at or below it. It never
// interpolates, so every figure reported is one that was measured.
package latency

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of a set of durations.
type Summary struct {
	N      int
	Median time.Duration
	P95    time.Duration
	Max    time.Duration
}

// Summarize computes the median, 95th percentile and maximum of ds; the
// zero Summary when ds is empty.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return Summary{N: len(s), Median: Percentile(s, 50), P95: Percentile(s, 95), Max: s[len(s)-1]}
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order and not empty: durations, or any other
// 64-bit count (bytes, say).
func Percentile[T ~int64](sorted []T, p float64) T {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

package latency

import (
	"testing"
	"time"
)

// TestSummarizeUsesNearestRank checks the method on values whose ranks
// are easy to count: of 1..30 ms, the median is the 15th value and the
// 95th percentile the 29th (ceil(28.5)); a linear or rounded-index method
// gives 16 ms and 29 ms or 30 ms instead.
func TestSummarizeUsesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 30; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := Summarize(ds)
	if d.N != 30 || d.Median != 15*time.Millisecond || d.P95 != 29*time.Millisecond || d.Max != 30*time.Millisecond {
		t.Fatalf("Summarize(1..30ms) = %+v", d)
	}
	if one := Summarize(ds[:1]); one.Median != 30*time.Millisecond || one.P95 != one.Median || one.Max != one.Median {
		t.Fatalf("Summarize of one value = %+v", one)
	}
	if none := Summarize(nil); none != (Summary{}) {
		t.Fatalf("Summarize(nil) = %+v", none)
	}
	if ds[0] != 30*time.Millisecond {
		t.Fatal("Summarize sorted its caller's slice")
	}
}

package sim

import (
	"fmt"
	"testing"
	"time"
)

// TestTracePrefixMatchesFmt holds appendPrefix to the format it replaces,
// over times that exercise rounding, padding and widths past twelve, and
// names shorter, as long as and longer than four characters.
func TestTracePrefixMatchesFmt(t *testing.T) {
	times := []time.Duration{0, 1, 499, 500, 501, 999_999, time.Millisecond, 1_234_567_891, 3*time.Second + 500,
		16 * time.Second, 99_999_999_999_500, 123_456_789_012_345_678, -1500 * time.Microsecond}
	for _, now := range times {
		for _, who := range []string{"", "n1", "sim", "c12", "n123", "client-7", "né"} {
			want := fmt.Sprintf("%12.6f %-4s ", now.Seconds(), who)
			if got := string(appendPrefix(nil, now, who)); got != want {
				t.Errorf("appendPrefix(%d, %q) = %q, want %q", now, who, got, want)
			}
		}
	}
}

package node_test

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/wire"
)

// An operator sets the failure detection policy. The node refuses a
// policy it cannot run (an unknown mode, an interval of zero, a negative
// grace) and takes one at the edges it can: a grace of zero.
func TestSetDetectionRefusesOnlyWhatItCannotRun(t *testing.T) {
	c := newCluster(t)
	c.settle()
	leader := c.leader()
	cases := []struct {
		name string
		m    *wire.SetDetection
		want wire.Status
	}{
		{"an unknown mode", &wire.SetDetection{ReqID: 60, Mode: 9, Interval: time.Second}, wire.StatusBadRequest},
		{"an interval of zero", &wire.SetDetection{ReqID: 61, Mode: 1}, wire.StatusBadRequest},
		{"a negative grace", &wire.SetDetection{ReqID: 62, Mode: 1, Interval: time.Second, Grace: -1}, wire.StatusBadRequest},
		{"a grace of zero", &wire.SetDetection{ReqID: 63, Mode: 1, Interval: 100 * time.Millisecond}, wire.StatusOK},
		{"eager mode", &wire.SetDetection{ReqID: 64, Mode: 2, Interval: 100 * time.Millisecond, Grace: 300 * time.Millisecond}, wire.StatusOK},
	}
	for _, tc := range cases {
		c.request(leader, 9, tc.m)
		c.settle()
		if r := c.reply(tc.m.ReqID); r == nil || r.Status != tc.want {
			t.Errorf("%s: got %+v, want status %s", tc.name, r, tc.want)
		}
	}
}

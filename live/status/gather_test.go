package status

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveStatus serves doc at /status after delay, requiring the bearer
// token secret.
func serveStatus(t *testing.T, doc Node, delay time.Duration, secret string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Gather reads every node at once and bounds each read by its wait: a
// node that is down, one that is slow and one that refuses the
// credential each cost only their own reading, and say how they failed,
// while the one that answers is read.
func TestGatherBoundsEachNode(t *testing.T) {
	const wait = 300 * time.Millisecond
	good := serveStatus(t, Node{ID: 1, Started: true}, 0, "s3cret")
	slow := serveStatus(t, Node{ID: 3, Started: true}, 5*time.Second, "s3cret")
	picky := serveStatus(t, Node{ID: 4}, 0, "another")
	targets := []Target{
		{ID: 1, HTTPAddr: strings.TrimPrefix(good.URL, "http://")},
		{ID: 2, HTTPAddr: closedAddr(t)},
		{ID: 3, HTTPAddr: strings.TrimPrefix(slow.URL, "http://")},
		{ID: 4, HTTPAddr: strings.TrimPrefix(picky.URL, "http://")},
		{ID: 5},
	}
	start := time.Now()
	got := Gather(context.Background(), targets, HTTPFetch(Auth{Secret: []byte("s3cret")}), wait)
	took := time.Since(start)
	if took > 2*wait+time.Second {
		t.Errorf("gathering took %v with a wait of %v: the slow node held everyone up", took, wait)
	}
	want := []string{"", "down", "unreachable", "error", "unknown"}
	for i, r := range got {
		if r.ID != targets[i].ID {
			t.Fatalf("reading %d is node %d, want %d: readings must keep the targets' order", i, r.ID, targets[i].ID)
		}
		if state := ReachState(r.Err); state != want[i] {
			t.Errorf("n%d: state %q (err %v), want %q", r.ID, state, r.Err, want[i])
		}
		if (r.Status == nil) != (r.Err != nil) {
			t.Errorf("n%d: status %v with error %v: exactly one must be set", r.ID, r.Status, r.Err)
		}
	}
	if got[0].Status == nil || got[0].Status.ID != 1 {
		t.Errorf("the answering node was not read: %+v", got[0])
	}
	if got[2].Took < wait || got[2].Took > wait+time.Second {
		t.Errorf("the slow node's reading took %v, want about the wait, %v", got[2].Took, wait)
	}
	if !strings.Contains(got[2].Err.Error(), "no answer within") {
		t.Errorf("the slow node's error %q does not say it waited", got[2].Err)
	}
}

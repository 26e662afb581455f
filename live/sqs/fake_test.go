package sqs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBackend is an in-memory Backend: queues of messages, each either
// ready or leased, with no clocks (leases never lapse unless released).
type fakeBackend struct {
	mu     sync.Mutex
	queues map[string]*fakeQueue
	seq    uint64
	lease  uint64
	// extended records each visibility an Extend asked for.
	extended []time.Duration
}

type fakeQueue struct {
	ready  []Received
	leased map[uint64]Received
	opts   QueueOptions
}

func newFakeBackend() *fakeBackend { return &fakeBackend{queues: map[string]*fakeQueue{}} }

func (f *fakeBackend) CreateQueue(_ context.Context, name string, opts QueueOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queues[name] != nil {
		return ErrQueueExists
	}
	f.queues[name] = &fakeQueue{leased: map[uint64]Received{}, opts: opts}
	return nil
}

func (f *fakeBackend) SetRedrive(_ context.Context, name string, opts QueueOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[name]
	if q == nil {
		return ErrNoQueue
	}
	q.opts = opts
	return nil
}

func (f *fakeBackend) DeleteQueue(_ context.Context, name string, _ Role) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queues[name] == nil {
		return ErrNoQueue
	}
	delete(f.queues, name)
	return nil
}

func (f *fakeBackend) QueueNames(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedNames(f.queues), nil
}

func (f *fakeBackend) Stats(_ context.Context, name string) (QueueStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[name]
	if q == nil {
		return QueueStats{}, ErrNoQueue
	}
	return QueueStats{Known: true, Ready: len(q.ready), Leased: len(q.leased), DeadLetter: q.opts.DeadLetter, MaxReceiveCount: q.opts.MaxReceiveCount}, nil
}

func (f *fakeBackend) Send(_ context.Context, queue string, payload []byte, _ time.Duration) (MessageID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		return MessageID{}, ErrNoQueue
	}
	f.seq++
	id := MessageID{Producer: 7, Seq: f.seq}
	q.ready = append(q.ready, Received{ID: id, Payload: payload})
	return id, nil
}

func (f *fakeBackend) SendBatch(ctx context.Context, queue string, entries []SendEntry) []SendResult {
	out := make([]SendResult, len(entries))
	for i, e := range entries {
		out[i].ID, out[i].Err = f.Send(ctx, queue, e.Payload, e.Delay)
	}
	return out
}

func (f *fakeBackend) Receive(_ context.Context, queue string, max int, _, _ time.Duration) ([]Received, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		return nil, ErrNoQueue
	}
	var out []Received
	for len(out) < max && len(q.ready) > 0 {
		r := q.ready[0]
		q.ready = q.ready[1:]
		f.lease++
		r.Lease, r.Grant, r.Attempt = f.lease, f.lease, r.Attempt+1
		q.leased[r.Lease] = r
		out = append(out, r)
	}
	return out, nil
}

// settle settles or hands back the delivery r names: by the fake's own
// lease when r is local, as the cluster backend does, else by the
// message's ID and the owner's lease (the fake's lease numbers serve as
// both). A delete of a message no longer leased counts as done.
func (f *fakeBackend) settle(queue string, r Receipt, back bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		return ErrNoQueue
	}
	lease, ok := q.find(r)
	switch {
	case !ok && !back && !r.Local:
		return nil
	case !ok:
		return fmt.Errorf("%w: lease %d", ErrLeaseGone, r.Lease)
	}
	d := q.leased[lease]
	delete(q.leased, lease)
	if back {
		q.ready = append(q.ready, d)
	}
	return nil
}

// find looks up the lease r names.
func (q *fakeQueue) find(r Receipt) (uint64, bool) {
	if r.Local {
		_, ok := q.leased[r.Lease]
		return r.Lease, ok
	}
	d, ok := q.leased[r.Grant]
	return r.Grant, ok && d.ID == r.ID
}

func (f *fakeBackend) Purge(_ context.Context, queue string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		return ErrNoQueue
	}
	q.ready, q.leased = nil, map[uint64]Received{}
	return nil
}

func (f *fakeBackend) Delete(_ context.Context, queue string, r Receipt) error {
	return f.settle(queue, r, false)
}

func (f *fakeBackend) DeleteBatch(_ context.Context, queue string, rs []Receipt) []error {
	out := make([]error, len(rs))
	for i, r := range rs {
		out[i] = f.settle(queue, r, false)
	}
	return out
}

func (f *fakeBackend) Release(_ context.Context, queue string, r Receipt) error {
	return f.settle(queue, r, true)
}

// Extend keeps the delivery leased; the fake has no clock to expire it,
// so it only checks the lease is held and records the visibility.
func (f *fakeBackend) Extend(_ context.Context, queue string, r Receipt, visibility time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queues[queue]
	if q == nil {
		return ErrNoQueue
	}
	if _, ok := q.find(r); !ok {
		return fmt.Errorf("%w: lease %d", ErrLeaseGone, r.Lease)
	}
	f.extended = append(f.extended, visibility)
	return nil
}

// Test credentials.
const (
	testKeyID  = "AKIDCLIENT"
	testSecret = "client-secret-key"
	testAdmin  = "AKIDADMIN"
	testRegion = "eu-west-1"
)

// testServer runs an endpoint over a fake backend at a fixed clock.
func testServer(t *testing.T) (*httptest.Server, *fakeBackend, time.Time) {
	t.Helper()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b := newFakeBackend()
	s, err := New(Config{Node: 1, Region: testRegion, Backend: b, Now: func() time.Time { return now },
		Keys: []AccessKey{{ID: testKeyID, Secret: testSecret}, {ID: testAdmin, Secret: "admin-secret-key", Role: RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return hs, b, now
}

// sign signs req as a SigV4 client does, at when, with the key and
// secret given.
func sign(req *http.Request, body []byte, keyID, secret string, when time.Time) {
	stamp := when.UTC().Format(amzDateLayout)
	req.Header.Set("X-Amz-Date", stamp)
	signed := []string{"content-type", "host", "x-amz-date"}
	if req.Header.Get("X-Amz-Target") != "" {
		signed = append(signed, "x-amz-target")
	}
	canonical, aerr := canonicalRequest(req, body, signed)
	if aerr != nil {
		panic(aerr)
	}
	sig := signature(secret, stamp, stamp[:8], testRegion, "sqs", canonical)
	req.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s/%s/sqs/aws4_request, SignedHeaders=%s, Signature=%s",
		sigv4Algorithm, keyID, stamp[:8], testRegion, strings.Join(signed, ";"), sig))
}

// queryCall posts a query protocol request signed by keyID and returns
// the status and body.
func queryCall(t *testing.T, hs *httptest.Server, now time.Time, keyID, secret string, form url.Values) (int, string) {
	t.Helper()
	body := []byte(form.Encode())
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Host = strings.TrimPrefix(hs.URL, "http://")
	sign(req, body, keyID, secret, now)
	return do(t, req)
}

// jsonCall posts a JSON protocol request signed by the client key.
func jsonCall(t *testing.T, hs *httptest.Server, now time.Time, action, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	req.Host = strings.TrimPrefix(hs.URL, "http://")
	sign(req, []byte(body), testKeyID, testSecret, now)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// between returns the text between the first open and close tags.
func between(s, tag string) string {
	_, rest, ok := strings.Cut(s, "<"+tag+">")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "</"+tag+">")
	return v
}

func containsAll(s string, parts ...string) bool {
	return !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(s, p) })
}

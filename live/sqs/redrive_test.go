package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// SetQueueAttributes sets, changes and removes an existing queue's
// RedrivePolicy through the backend, and GetQueueAttributes gives back
// what was set; a bad policy, or one for a queue that does not exist,
// is refused with the reason and changes nothing.
func TestSetQueueAttributesChangesTheRedrivePolicy(t *testing.T) {
	hs, b, now := testServer(t)
	for _, name := range []string{"q", "parked", "other"} {
		b.CreateQueue(t.Context(), name, QueueOptions{})
	}
	arn := "arn:aws:sqs:" + testRegion + ":000000000000:"
	set := func(queue, raw string) (int, string) {
		body := fmt.Sprintf(`{"QueueUrl":"http://x/000000000000/%s","Attributes":{"RedrivePolicy":%q}}`, queue, raw)
		status, answer, _ := jsonCall(t, hs, now, "SetQueueAttributes", body)
		return status, answer
	}
	policy := func(target, count string) string {
		return fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":%s}`, target, count)
	}
	has := func(dead string, count int) {
		t.Helper()
		if st, _ := b.Stats(t.Context(), "q"); st.DeadLetter != dead || st.MaxReceiveCount != count {
			t.Fatalf("the backend holds %q after %d, want %q after %d", st.DeadLetter, st.MaxReceiveCount, dead, count)
		}
	}
	get := func() string {
		t.Helper()
		status, body, _ := jsonCall(t, hs, now, "GetQueueAttributes", `{"QueueUrl":"http://x/000000000000/q","AttributeNames":["All"]}`)
		if status != 200 {
			t.Fatalf("GetQueueAttributes: HTTP %d %s", status, body)
		}
		return body
	}

	if status, body := set("q", policy(arn+"parked", "3")); status != 200 {
		t.Fatalf("setting a policy: HTTP %d %s", status, body)
	}
	has("parked", 3)
	if body := get(); !containsAll(body, `deadLetterTargetArn`, arn+`parked`, `maxReceiveCount`) {
		t.Fatalf("GetQueueAttributes after the set: %s", body)
	}
	if status, body := set("q", policy(arn+"other", `"7"`)); status != 200 {
		t.Fatalf("changing the policy: HTTP %d %s", status, body)
	}
	has("other", 7)

	for _, tc := range []struct{ queue, raw, want string }{
		{"q", policy(arn+"missing", "5"), "Dead letter target does not exist"},
		{"q", policy(arn+"q", "5"), "cannot be its own dead-letter queue"},
		{"q", policy(arn+"parked", "0"), "valid values are from 1 to 1000"},
		{"q", "{not json", "not a valid JSON map"},
		{"gone", policy(arn+"parked", "5"), "QueueDoesNotExist"},
	} {
		if status, body := set(tc.queue, tc.raw); status != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("%s on %s: HTTP %d %s, want %s", tc.raw, tc.queue, status, body, tc.want)
		}
		has("other", 7)
	}

	if status, body := set("q", ""); status != 200 {
		t.Fatalf("removing the policy: HTTP %d %s", status, body)
	}
	has("", 0)
	if body := get(); strings.Contains(body, "RedrivePolicy") {
		t.Fatalf("GetQueueAttributes after the removal still names a policy: %s", body)
	}
}

// The cluster backend changes a real node's setting: Stats reads back
// what SetRedrive set as soon as it returns, zero options remove it, and
// a queue that does not exist is ErrNoQueue.
func TestClusterBackendSetsTheRedrive(t *testing.T) {
	b := backendFor(t, oneNode(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"jobs", "parked"} {
		if err := b.CreateQueue(ctx, name, QueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []QueueOptions{{DeadLetter: "parked", MaxReceiveCount: 2}, {}} {
		if err := b.SetRedrive(ctx, "jobs", opts); err != nil {
			t.Fatalf("SetRedrive %+v: %v", opts, err)
		}
		if st, err := b.Stats(ctx, "jobs"); err != nil || st.DeadLetter != opts.DeadLetter || st.MaxReceiveCount != opts.MaxReceiveCount {
			t.Fatalf("after SetRedrive %+v, stats %+v, %v", opts, st, err)
		}
	}
	if err := b.SetRedrive(ctx, "nope", QueueOptions{DeadLetter: "parked", MaxReceiveCount: 2}); !errors.Is(err, ErrNoQueue) {
		t.Fatalf("SetRedrive of a missing queue: %v, want ErrNoQueue", err)
	}
	if err := b.SetRedrive(ctx, "jobs", QueueOptions{DeadLetter: "parked", MaxReceiveCount: 2}); err != nil {
		t.Fatal(err)
	}
	err := b.SetRedrive(ctx, "parked", QueueOptions{DeadLetter: "jobs", MaxReceiveCount: 2})
	if !errors.Is(err, ErrBadRedrive) || backendError(err, "parked").code != "InvalidAttributeValue" {
		t.Fatalf("SetRedrive closing a ring: %v, want ErrBadRedrive", err)
	}
}

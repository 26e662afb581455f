package main

import (
	"testing"
	"time"

	"github.com/cairnmq/cairn/event"
	"github.com/cairnmq/cairn/live/eventlog"
)

// firstLogged returns the earliest time at or after since at which one of
// nodes logged the event name with attribute key=value, failing the test
// if none did.
func firstLogged(t *testing.T, nodes []*procNode, name event.Name, since time.Time, key event.Key, value string) time.Time {
	t.Helper()
	var logs []string
	for _, nd := range nodes {
		logs = append(logs, nd.log)
	}
	at, ok, err := eventlog.FirstLogged(logs, eventlog.Event{Name: name, Key: key, Value: value}, since)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("no node of %v logged %s with %s=%s after %v", ids(nodes), name, key, value, since)
	}
	return at
}

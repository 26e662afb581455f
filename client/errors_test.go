package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnmq/cairn/client/core"
	"github.com/cairnmq/cairn/wire"
)

// An operation that ran out of attempts says what the last node said,
// so a user learns why retrying did not help.
func TestUnknownOutcomeCarriesTheLastReason(t *testing.T) {
	e := core.Event{Kind: core.OpMoveOwner, Queue: "jobs", Outcome: core.OutcomeUnknown, Status: wire.StatusUnavailable,
		Detail: "queue jobs is already being handed to n3", Attempts: 6}
	err := outcomeError(e)
	if !errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "already being handed to n3") {
		t.Fatalf("got %v, want an unknown outcome naming the node's reason", err)
	}
	e.Detail = ""
	if err := outcomeError(e); !strings.Contains(err.Error(), "last status unavailable after 6 attempts") {
		t.Fatalf("without a reason: %v", err)
	}
}

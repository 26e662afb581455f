package client

import (
	"errors"
	"fmt"

	"github.com/cairnmq/cairn/client/core"
)

// ErrUnknownOutcome is wrapped by the error of an operation that may or
// may not have happened: a request may have been acted on without the
// client hearing back. A publish with this outcome may be delivered.
var ErrUnknownOutcome = errors.New("client: outcome unknown: the operation may or may not have happened")

// ErrClosed is returned by operations on a closed Client. An operation in
// flight when the client closed wraps both ErrClosed and
// ErrUnknownOutcome.
var ErrClosed = errors.New("client: closed")

// StatusError reports an operation that certainly did not happen and
// never will, with the status the node gave.
type StatusError struct {
	Op     string // "create", "delete", "publish", "subscribe", "ack", "nack", "extend" or "set-detection"
	Queue  string
	Status Status
	// Detail is the node's explanation, when it gave one (for example
	// that the operation needs the admin role).
	Detail string
}

// Error implements error.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("client: %s on queue %q failed: %s", e.Op, e.Queue, e.Status)
	if e.Queue == "" {
		msg = fmt.Sprintf("client: %s failed: %s", e.Op, e.Status)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// outcomeError turns a finished operation into the error its caller sees.
func outcomeError(e core.Event) error {
	switch e.Outcome {
	case core.OutcomeOK:
		return nil
	case core.OutcomeFailed:
		return &StatusError{Op: e.Kind.String(), Queue: e.Queue, Status: statusFrom(e.Status), Detail: e.Detail}
	}
	if e.Detail != "" {
		// The last node's reason says why retrying did not help (a
		// handoff under way, a node down), which the status alone does not.
		return fmt.Errorf("%w: %s on queue %q (last status %s: %s, after %d attempts)",
			ErrUnknownOutcome, e.Kind, e.Queue, e.Status, e.Detail, e.Attempts)
	}
	return fmt.Errorf("%w: %s on queue %q (last status %s after %d attempts)",
		ErrUnknownOutcome, e.Kind, e.Queue, e.Status, e.Attempts)
}

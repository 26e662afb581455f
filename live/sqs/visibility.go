package sqs

import (
	"context"
	"sync"
	"time"
)

// changeVisibility sets how long a received message stays hidden from
// now on: 0 hands it back for redelivery at once; any other value, up to
// the 12 hours SQS allows, extends (or shortens) its delivery's lease on
// the queue's owner.
func changeVisibility(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in struct {
		QueueUrl          string
		ReceiptHandle     string
		VisibilityTimeout *int
	}
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	queue, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := s.release(ctx, queue, in.ReceiptHandle, in.VisibilityTimeout); aerr != nil {
		return nil, aerr
	}
	return emptyOutput{}, nil
}

// release serves one visibility change: 0 hands the message back, any
// other value extends its lease to that many seconds from now.
func (s *Server) release(ctx context.Context, queue, handle string, visibility *int) *apiError {
	switch {
	case handle == "":
		return errMissingParameter("ReceiptHandle")
	case visibility == nil:
		return errMissingParameter("VisibilityTimeout")
	case *visibility < 0 || *visibility > visibilityMax:
		return errInvalidParameter("VisibilityTimeout %d is outside 0 to %d seconds", *visibility, visibilityMax)
	}
	r, aerr := s.handles.open(handle, queue)
	if aerr != nil {
		return aerr
	}
	var err error
	if *visibility == 0 {
		err = s.cfg.Backend.Release(ctx, queue, r)
	} else {
		err = s.cfg.Backend.Extend(ctx, queue, r, time.Duration(*visibility)*time.Second)
	}
	if err != nil {
		return backendError(err, queue)
	}
	return nil
}

// visibilityEntry is one entry of ChangeMessageVisibilityBatch.
type visibilityEntry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout *int
}

// changeVisibilityBatch serves each entry as changeVisibility does; an
// entry that fails is reported with its error, the others still apply.
func changeVisibilityBatch(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in struct {
		QueueUrl string
		Entries  []visibilityEntry `query:"ChangeMessageVisibilityBatchRequestEntry"`
	}
	queue, aerr := openBatch(c, &in, func() string { return in.QueueUrl },
		func() []string { return entryIDs(in.Entries, func(e visibilityEntry) string { return e.Id }) })
	if aerr != nil {
		return nil, aerr
	}
	out := struct {
		Successful []idEntry    `xml:"ChangeMessageVisibilityBatchResultEntry"`
		Failed     []batchError `xml:"BatchResultErrorEntry"`
	}{Successful: []idEntry{}, Failed: []batchError{}}
	// Each change waits for the owner's answer, a round trip to it, and
	// the entries are independent, so they run side by side: a batch
	// waits for about one round trip rather than one per entry.
	errs := make([]*apiError, len(in.Entries))
	var wg sync.WaitGroup
	for i, e := range in.Entries {
		wg.Go(func() { errs[i] = s.release(ctx, queue, e.ReceiptHandle, e.VisibilityTimeout) })
	}
	wg.Wait()
	for i, e := range in.Entries {
		if errs[i] != nil {
			out.Failed = append(out.Failed, entryError(e.Id, errs[i]))
			continue
		}
		out.Successful = append(out.Successful, idEntry{Id: e.Id})
	}
	return out, nil
}

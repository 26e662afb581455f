package sqs

import "context"

// changeVisibility serves the one change cairn can make: a visibility
// timeout of 0 hands the message back for redelivery at once. Extending
// or shortening a lease needs lease extension, which cairn lacks.
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

// release serves one visibility change: 0 hands the message back.
func (s *Server) release(ctx context.Context, queue, handle string, visibility *int) *apiError {
	switch {
	case handle == "":
		return errMissingParameter("ReceiptHandle")
	case visibility == nil:
		return errMissingParameter("VisibilityTimeout")
	case *visibility != 0:
		return errUnsupported("ChangeMessageVisibility to %d seconds is not supported: cairn cannot extend or shorten a "+
			"delivery's lease yet. VisibilityTimeout 0 (make the message visible again now) is supported; otherwise pass the "+
			"visibility timeout you need to ReceiveMessage.", *visibility)
	}
	r, aerr := s.handles.open(handle, queue)
	if aerr != nil {
		return aerr
	}
	if err := s.cfg.Backend.Release(ctx, queue, r.Lease); err != nil {
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

// changeVisibilityBatch serves each entry as changeVisibility does: a
// visibility timeout of 0 hands the message back, any other fails that
// entry with UnsupportedOperation.
func changeVisibilityBatch(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in struct {
		QueueUrl string
		Entries  []visibilityEntry `query:"ChangeMessageVisibilityBatchRequestEntry"`
	}
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	queue, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	ids := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		ids[i] = e.Id
	}
	if aerr := checkBatchIDs(ids); aerr != nil {
		return nil, aerr
	}
	out := struct {
		Successful []idEntry    `xml:"ChangeMessageVisibilityBatchResultEntry"`
		Failed     []batchError `xml:"BatchResultErrorEntry"`
	}{Successful: []idEntry{}, Failed: []batchError{}}
	for _, e := range in.Entries {
		if aerr := s.release(ctx, queue, e.ReceiptHandle, e.VisibilityTimeout); aerr != nil {
			out.Failed = append(out.Failed, entryError(e.Id, aerr))
			continue
		}
		out.Successful = append(out.Successful, idEntry{Id: e.Id})
	}
	return out, nil
}

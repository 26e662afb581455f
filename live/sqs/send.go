package sqs

import (
	"context"
	"time"
)

// outgoing is a validated message ready to be stored.
type outgoing struct {
	env   envelope
	delay time.Duration
}

// checkSend validates one message as SendMessage or a batch entry
// carries it, and returns it ready to store with its size.
func (s *Server) checkSend(c *call, body string, delay *int, attrs, system map[string]messageAttribute, dedup, group string) (outgoing, int, *apiError) {
	if aerr := checkBody(body); aerr != nil {
		return outgoing{}, 0, aerr
	}
	size, aerr := checkAttributes(attrs)
	if aerr != nil {
		return outgoing{}, 0, aerr
	}
	size += len(body)
	switch {
	case size > messageBytesMax:
		return outgoing{}, 0, errInvalidParameter("One or more parameters are invalid. Reason: Message must be shorter than %d bytes (it is %d with its attributes).", messageBytesMax, size)
	case dedup != "" || group != "":
		return outgoing{}, 0, errInvalidParameter("The request includes MessageDeduplicationId or MessageGroupId, which only FIFO queues take; cairn has no FIFO queues.")
	case len(system) > 0:
		return outgoing{}, 0, errUnsupported("Message system attributes (such as AWSTraceHeader) are not stored by cairn; send them as message attributes.")
	}
	var d time.Duration
	if delay != nil {
		if *delay < 0 || *delay > delayMax {
			return outgoing{}, 0, errInvalidParameter("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and %d.", *delay, delayMax)
		}
		d = time.Duration(*delay) * time.Second
	}
	env := envelope{Body: body, Attributes: attrs, SentMillis: s.cfg.Now().UnixMilli(), SenderID: c.key.ID}
	return outgoing{env: env, delay: d}, size, nil
}

// store sends one message and answers as SendMessage does, once the
// backend has confirmed it.
func (s *Server) store(ctx context.Context, queue string, m outgoing) (sendOutput, *apiError) {
	id, err := s.cfg.Backend.Send(ctx, queue, m.env.encode(), m.delay)
	if err != nil {
		return sendOutput{}, backendError(err, queue)
	}
	return m.stored(id), nil
}

// stored is SendMessage's answer for m, stored as id.
func (m outgoing) stored(id MessageID) sendOutput {
	return sendOutput{
		MessageId:              messageIDString(id),
		MD5OfMessageBody:       md5Hex(m.env.Body),
		MD5OfMessageAttributes: attributesMD5(m.env.Attributes),
	}
}

func sendMessage(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in sendInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	queue, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	m, _, aerr := s.checkSend(c, in.MessageBody, in.DelaySeconds, in.MessageAttributes, in.MessageSystemAttributes, in.MessageDeduplicationId, in.MessageGroupId)
	if aerr != nil {
		return nil, aerr
	}
	out, aerr := s.store(ctx, queue, m)
	if aerr != nil {
		return nil, aerr
	}
	return out, nil
}

// openBatch decodes a batch request into in, then finds its queue from
// the URL queueURL reads and checks the entry IDs ids reads, as every
// batch action does first.
func openBatch(c *call, in any, queueURL func() string, ids func() []string) (string, *apiError) {
	if aerr := c.decode(in); aerr != nil {
		return "", aerr
	}
	queue, aerr := queueFromURL(c, queueURL())
	if aerr != nil {
		return "", aerr
	}
	if aerr := checkBatchIDs(ids()); aerr != nil {
		return "", aerr
	}
	return queue, nil
}

// entryIDs lists the IDs of a batch's entries, in order.
func entryIDs[E any](entries []E, id func(E) string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = id(e)
	}
	return out
}

// checkBatchIDs applies the rules every batch shares: 1 to 10 entries,
// each with a distinct, well-formed ID.
func checkBatchIDs(ids []string) *apiError {
	switch {
	case len(ids) == 0:
		return errEmptyBatch()
	case len(ids) > batchEntriesMax:
		return errTooManyEntries(len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !validBatchID(id) {
			return errInvalidBatchID(id)
		}
		if seen[id] {
			return errIDsNotDistinct(id)
		}
		seen[id] = true
	}
	return nil
}

func validBatchID(id string) bool {
	if id == "" || len(id) > 80 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func sendMessageBatch(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in sendBatchInput
	queue, aerr := openBatch(c, &in, func() string { return in.QueueUrl },
		func() []string { return entryIDs(in.Entries, func(e sendEntry) string { return e.Id }) })
	if aerr != nil {
		return nil, aerr
	}
	out := sendBatchOutput{Successful: []sendResultEntry{}, Failed: []batchError{}}
	ready := make([]outgoing, len(in.Entries))
	valid := make([]bool, len(in.Entries))
	total := 0
	for i, e := range in.Entries {
		m, size, aerr := s.checkSend(c, e.MessageBody, e.DelaySeconds, e.MessageAttributes, e.MessageSystemAttributes, e.MessageDeduplicationId, e.MessageGroupId)
		if aerr != nil {
			out.Failed = append(out.Failed, entryError(e.Id, aerr))
			continue
		}
		ready[i], valid[i] = m, true
		total += size
	}
	if total > messageBytesMax {
		return nil, errBatchTooLong(total)
	}
	// The valid entries are stored together: each waits for its own
	// confirmation, and they ride the same replication rounds.
	var entries []SendEntry
	for i := range in.Entries {
		if valid[i] {
			entries = append(entries, SendEntry{Payload: ready[i].env.encode(), Delay: ready[i].delay})
		}
	}
	results := s.cfg.Backend.SendBatch(ctx, queue, entries)
	for i, e := range in.Entries {
		if !valid[i] {
			continue
		}
		r := results[0]
		results = results[1:]
		if r.Err != nil {
			out.Failed = append(out.Failed, entryError(e.Id, backendError(r.Err, queue)))
			continue
		}
		o := ready[i].stored(r.ID)
		out.Successful = append(out.Successful, sendResultEntry{Id: e.Id, MessageId: o.MessageId,
			MD5OfMessageBody: o.MD5OfMessageBody, MD5OfMessageAttributes: o.MD5OfMessageAttributes})
	}
	return out, nil
}

// entryError is a batch entry's failure, as SQS lists it.
func entryError(id string, e *apiError) batchError {
	return batchError{Id: id, SenderFault: e.sender, Code: e.code, Message: e.message}
}

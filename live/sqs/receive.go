package sqs

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// receiveMax is the most messages one ReceiveMessage returns.
const receiveMax = 10

func receiveMessage(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in receiveInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	queue, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	max, visibility, wait, aerr := receiveBounds(in)
	if aerr != nil {
		return nil, aerr
	}
	system := append(slices.Clone(in.AttributeNames), in.MessageSystemAttributeNames...)
	got, err := s.cfg.Backend.Receive(ctx, queue, max, visibility, wait)
	if err != nil {
		return nil, backendError(err, queue)
	}
	out := receiveOutput{Messages: []message{}}
	for _, r := range got {
		out.Messages = append(out.Messages, s.received(queue, r, system, in.MessageAttributeNames))
	}
	return out, nil
}

// receiveBounds checks and defaults MaxNumberOfMessages,
// VisibilityTimeout and WaitTimeSeconds.
func receiveBounds(in receiveInput) (max int, visibility, wait time.Duration, aerr *apiError) {
	max, vis, w := 1, defaultVisibility, 0
	if in.MaxNumberOfMessages != nil {
		max = *in.MaxNumberOfMessages
		if max < 1 || max > receiveMax {
			return 0, 0, 0, errInvalidParameter("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and %d, if provided.", max, receiveMax)
		}
	}
	if in.VisibilityTimeout != nil {
		vis = *in.VisibilityTimeout
		if vis < 0 || vis > visibilityMax {
			return 0, 0, 0, errInvalidParameter("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and %d, if provided.", vis, visibilityMax)
		}
	}
	if in.WaitTimeSeconds != nil {
		w = *in.WaitTimeSeconds
		if w < 0 || w > waitMax {
			return 0, 0, 0, errInvalidParameter("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= %d, if provided.", w, waitMax)
		}
	}
	// A lease cannot be shorter than a second: a visibility timeout of 0
	// is served as 1, and the message is visible again a second later.
	return max, time.Duration(max1(vis)) * time.Second, time.Duration(w) * time.Second, nil
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// received renders one delivery: the stored envelope's body, the
// attributes asked for, and a receipt handle naming the lease.
func (s *Server) received(queue string, r Received, system, names []string) message {
	env := decodeEnvelope(r.Payload)
	m := message{
		MessageId:     messageIDString(r.ID),
		ReceiptHandle: s.handles.mint(receipt{Node: s.cfg.Node, Start: s.handles.start, Lease: r.Lease, Grant: r.Grant, Queue: queue, Message: r.ID}),
		MD5OfBody:     md5Hex(env.Body),
		Body:          env.Body,
	}
	m.Attributes = systemAttributes(env, r, system)
	m.MessageAttributes = selectAttributes(env.Attributes, names)
	m.MD5OfMessageAttributes = attributesMD5(m.MessageAttributes)
	return m
}

// systemAttributes answers the message system attributes asked for
// (All, or by name); ApproximateFirstReceiveTimestamp is not known, and
// foreign messages (published by a cairn client) have no sender or time.
func systemAttributes(env envelope, r Received, names []string) map[string]string {
	all := slices.Contains(names, "All")
	want := func(n string) bool { return all || slices.Contains(names, n) }
	out := map[string]string{}
	if want("ApproximateReceiveCount") {
		out["ApproximateReceiveCount"] = strconv.FormatUint(uint64(r.Attempt), 10)
	}
	if want("SentTimestamp") && env.SentMillis > 0 {
		out["SentTimestamp"] = strconv.FormatInt(env.SentMillis, 10)
	}
	if want("SenderId") && env.SenderID != "" {
		out["SenderId"] = env.SenderID
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// selectAttributes keeps the message attributes asked for: All or .*
// for every one, a name, or a prefix such as "trace.*".
func selectAttributes(attrs map[string]messageAttribute, names []string) map[string]messageAttribute {
	out := map[string]messageAttribute{}
	for name, a := range attrs {
		for _, n := range names {
			prefix, wildcard := strings.CutSuffix(n, ".*")
			if n == "All" || n == ".*" || n == name || wildcard && strings.HasPrefix(name, prefix+".") {
				out[name] = a
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func deleteMessage(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in deleteInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	queue, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	if in.ReceiptHandle == "" {
		return nil, errMissingParameter("ReceiptHandle")
	}
	if aerr := s.settle(ctx, queue, in.ReceiptHandle); aerr != nil {
		return nil, aerr
	}
	return emptyOutput{}, nil
}

// settle deletes the delivery a handle names, durably.
func (s *Server) settle(ctx context.Context, queue, handle string) *apiError {
	r, aerr := s.handles.open(handle, queue)
	if aerr != nil {
		return aerr
	}
	if err := s.cfg.Backend.Delete(ctx, queue, r); err != nil {
		return backendError(err, queue)
	}
	return nil
}

func deleteMessageBatch(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in deleteBatchInput
	queue, aerr := openBatch(c, &in, func() string { return in.QueueUrl },
		func() []string { return entryIDs(in.Entries, func(e deleteEntry) string { return e.Id }) })
	if aerr != nil {
		return nil, aerr
	}
	errs := make([]*apiError, len(in.Entries))
	// The entries whose handles open are deleted together, so their acks
	// travel in one frame and settle in one durable write on the owner.
	var rs []Receipt
	var at []int
	for i, e := range in.Entries {
		r, aerr := s.handles.open(e.ReceiptHandle, queue)
		if aerr != nil {
			errs[i] = aerr
			continue
		}
		rs = append(rs, r)
		at = append(at, i)
	}
	for j, err := range s.cfg.Backend.DeleteBatch(ctx, queue, rs) {
		if err != nil {
			errs[at[j]] = backendError(err, queue)
		}
	}
	out := deleteBatchOutput{Successful: []idEntry{}, Failed: []batchError{}}
	for i, e := range in.Entries {
		if errs[i] != nil {
			out.Failed = append(out.Failed, entryError(e.Id, errs[i]))
			continue
		}
		out.Successful = append(out.Successful, idEntry{Id: e.Id})
	}
	return out, nil
}

package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// countAttributes are the attributes read from the queue's owner.
var countAttributes = []string{
	"ApproximateNumberOfMessages",
	"ApproximateNumberOfMessagesNotVisible",
	"ApproximateNumberOfMessagesDelayed",
}

// silentAttributes are attributes SQS may report that cairn does not
// know (it keeps no creation or modification time, and none of the
// refused settings): asked for by name they are left out of the answer,
// as SQS leaves out an attribute that is not set.
var silentAttributes = []string{
	"CreatedTimestamp", "LastModifiedTimestamp", "MessageRetentionPeriod", "Policy",
	"RedriveAllowPolicy", "FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit",
	"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled",
}

func getQueueAttributes(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in getAttributesInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	name, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	wanted, aerr := wantedAttributes(in.AttributeNames)
	if aerr != nil {
		return nil, aerr
	}
	out := attributesOutput{Attributes: map[string]string{}}
	for _, a := range wanted {
		if v, ok := fixedAttributes[a]; ok {
			out.Attributes[a] = v
		}
	}
	if slices.Contains(wanted, "QueueArn") {
		out.Attributes["QueueArn"] = s.queueARN(name)
	}
	wantsCounts := slices.ContainsFunc(wanted, func(a string) bool { return slices.Contains(countAttributes, a) })
	if !wantsCounts && !slices.Contains(wanted, "RedrivePolicy") {
		// Nothing needs the owner, but the queue must still exist.
		if aerr := s.requireQueue(ctx, name); aerr != nil {
			return nil, aerr
		}
		return out, nil
	}
	st, err := s.cfg.Backend.Stats(ctx, name)
	if err != nil {
		return nil, backendError(err, name)
	}
	if slices.Contains(wanted, "RedrivePolicy") && st.DeadLetter != "" {
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": s.queueARN(st.DeadLetter), "maxReceiveCount": st.MaxReceiveCount})
		out.Attributes["RedrivePolicy"] = string(policy)
	}
	if !wantsCounts {
		return out, nil
	}
	if !st.Known {
		return nil, errUnavailable(fmt.Sprintf("queue %s's owner did not report its counts (a failover may be under way); retry", name))
	}
	counts := map[string]int{countAttributes[0]: st.Ready, countAttributes[1]: st.Leased, countAttributes[2]: st.Delayed}
	for _, a := range countAttributes {
		if slices.Contains(wanted, a) {
			out.Attributes[a] = strconv.Itoa(counts[a])
		}
	}
	return out, nil
}

// wantedAttributes expands the requested names ("All" means every one
// cairn knows) and refuses names SQS does not have.
func wantedAttributes(names []string) ([]string, *apiError) {
	all := append(slices.Clone(countAttributes), "QueueArn", "RedrivePolicy")
	for _, name := range sortedNames(fixedAttributes) {
		all = append(all, name)
	}
	var wanted []string
	for _, n := range names {
		switch {
		case n == "All":
			wanted = append(wanted, all...)
		case slices.Contains(all, n):
			wanted = append(wanted, n)
		case slices.Contains(silentAttributes, n):
		default:
			return nil, errInvalidAttributeName("Unknown Attribute %s.", n)
		}
	}
	return wanted, nil
}

// backendError turns a backend's error into SQS's.
func backendError(err error, queue string) *apiError {
	switch {
	case errors.Is(err, ErrNoQueue):
		return errNoQueue(queue)
	case errors.Is(err, ErrQueueExists):
		return errQueueExists(queue)
	case errors.Is(err, ErrDenied):
		return errAccessDenied(err.Error())
	case errors.Is(err, ErrTooLarge):
		return errInvalidParameter("The message is over the cluster's size limit: %v", err)
	case errors.Is(err, ErrBadName):
		return errInvalidParameter("%v", err)
	case errors.Is(err, ErrBadRedrive):
		return errInvalidAttributeValue("Value for parameter RedrivePolicy is invalid. Reason: %v.", err)
	case errors.Is(err, ErrLeaseGone):
		return errReceiptHandle("%v", err)
	case errors.Is(err, ErrUnknownOutcome):
		return errUnavailable(fmt.Sprintf("the cluster did not answer in time, so the outcome is unknown (a queue failing over, say); "+
			"retrying is safe, though a retried send may store its message twice: %v", err))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errUnavailable(fmt.Sprintf("the request ended before the cluster answered: %v", err))
	}
	return errUnavailable(err.Error())
}

// queueARN is the ARN SQS gives queue name at this endpoint.
func (s *Server) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.cfg.Region, s.cfg.AccountID, name)
}

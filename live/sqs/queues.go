package sqs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Queue attributes. cairn stores no per-queue SQS attributes yet: the
// settable ones below are accepted at their fixed values only, so a
// tool that states the defaults works and one that asks for something
// else is told plainly rather than ignored.
const (
	// defaultVisibility is a queue's visibility timeout, in seconds; a
	// ReceiveMessage may ask for another.
	defaultVisibility = 30
	// visibilityMax is the longest visibility timeout SQS allows (12 h).
	visibilityMax = 43200
	// waitMax is the longest long poll SQS allows, in seconds.
	waitMax = 20
	// delayMax is the longest message delay SQS allows, in seconds.
	delayMax = 900
)

// fixedAttributes are the settable attributes cairn serves at one value.
var fixedAttributes = map[string]string{
	"VisibilityTimeout":             strconv.Itoa(defaultVisibility),
	"DelaySeconds":                  "0",
	"ReceiveMessageWaitTimeSeconds": "0",
	"MaximumMessageSize":            strconv.Itoa(messageBytesMax),
}

// refusedAttributes are attributes SQS knows and cairn cannot honour,
// with why.
var refusedAttributes = map[string]string{
	"MessageRetentionPeriod":       "cairn keeps every message until it is deleted; it has no retention period",
	"RedriveAllowPolicy":           "cairn lets any queue be a dead-letter queue",
	"FifoQueue":                    "cairn has no FIFO queues",
	"ContentBasedDeduplication":    "cairn has no FIFO queues",
	"DeduplicationScope":           "cairn has no FIFO queues",
	"FifoThroughputLimit":          "cairn has no FIFO queues",
	"Policy":                       "access is granted by the endpoint's access keys, not by queue policies",
	"KmsMasterKeyId":               "cairn does not encrypt messages with KMS",
	"KmsDataKeyReusePeriodSeconds": "cairn does not encrypt messages with KMS",
	"SqsManagedSseEnabled":         "cairn does not encrypt messages at rest",
}

// checkSettable accepts attributes a create or set may carry: the fixed
// ones at their values. It names the first it refuses and why.
func checkSettable(attrs map[string]string) *apiError {
	for _, name := range sortedNames(attrs) {
		v := attrs[name]
		if fixed, ok := fixedAttributes[name]; ok {
			if v != fixed {
				return errInvalidAttributeValue("Invalid value for the parameter %s: cairn serves every queue with %s=%s and stores "+
					"no per-queue setting yet (a ReceiveMessage may pass its own VisibilityTimeout and WaitTimeSeconds, "+
					"a SendMessage its own DelaySeconds).", name, name, fixed)
			}
			continue
		}
		if name == "FifoQueue" && v == "false" || name == "SqsManagedSseEnabled" && v == "false" {
			continue
		}
		if why, ok := refusedAttributes[name]; ok {
			if name == "FifoQueue" {
				return errUnsupported("FIFO queues are not supported: %s.", why)
			}
			return errInvalidAttributeValue("Invalid value for the parameter %s: %s.", name, why)
		}
		return errInvalidAttributeName("Unknown Attribute %s.", name)
	}
	return nil
}

// checkQueueName applies SQS's rules: 1 to 80 letters, digits, '-' and
// '_' (cairn accepts more, but a name SQS would refuse is refused here
// too, so the application stays portable). A .fifo name is refused as a
// FIFO queue.
func checkQueueName(name string) *apiError {
	if strings.HasSuffix(name, ".fifo") {
		return errUnsupported("FIFO queues are not supported: cairn has no FIFO queues (queue name %q).", name)
	}
	if name == "" || len(name) > 80 {
		return errInvalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length (queue name %q).", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return errInvalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length (queue name %q).", name)
		}
	}
	return nil
}

// queueURL is the URL of a queue as the client reaches this endpoint.
func (s *Server) queueURL(c *call, name string) string {
	return c.base + "/" + s.cfg.AccountID + "/" + name
}

// queueFromURL finds the queue a request names: its QueueUrl, or the
// request's path (older query clients post to the queue's URL).
func queueFromURL(c *call, raw string) (string, *apiError) {
	path := c.path
	if raw != "" {
		u, err := url.Parse(raw)
		if err != nil {
			return "", errInvalidParameter("Value %s for parameter QueueUrl is invalid. Reason: not a URL.", raw)
		}
		path = u.Path
	}
	segments := strings.Split(strings.Trim(path, "/"), "/")
	if len(segments) != 2 {
		if raw == "" {
			return "", errMissingParameter("QueueUrl")
		}
		return "", errInvalidParameter("Value %s for parameter QueueUrl is invalid. Reason: want http(s)://host/ACCOUNT/QUEUE.", raw)
	}
	name := segments[1]
	if aerr := checkQueueName(name); aerr != nil {
		return "", aerr
	}
	return name, nil
}

func createQueue(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in createQueueInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	if aerr := checkQueueName(in.QueueName); aerr != nil {
		return nil, aerr
	}
	attrs := maps.Clone(in.Attributes)
	var opts QueueOptions
	if raw, ok := attrs["RedrivePolicy"]; ok {
		delete(attrs, "RedrivePolicy")
		var aerr *apiError
		if opts, aerr = s.redrivePolicy(ctx, in.QueueName, raw); aerr != nil {
			return nil, aerr
		}
	}
	if aerr := checkSettable(attrs); aerr != nil {
		return nil, aerr
	}
	if len(in.Tags) > 0 {
		return nil, errUnsupported("Queue tags are not supported: cairn stores no queue tags.")
	}
	// A queue that exists is answered with its URL, as SQS answers a
	// create whose attributes match, and every cairn queue's do (a
	// redrive policy aside, which the existing queue keeps).
	if err := s.cfg.Backend.CreateQueue(ctx, in.QueueName, opts); err != nil && !errors.Is(err, ErrQueueExists) {
		return nil, backendError(err, in.QueueName)
	}
	return queueURLOutput{QueueUrl: s.queueURL(c, in.QueueName)}, nil
}

func getQueueURL(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in getQueueURLInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	if aerr := checkQueueName(in.QueueName); aerr != nil {
		return nil, aerr
	}
	if aerr := s.requireQueue(ctx, in.QueueName); aerr != nil {
		return nil, aerr
	}
	return queueURLOutput{QueueUrl: s.queueURL(c, in.QueueName)}, nil
}

// requireQueue answers NonExistentQueue for a queue the cluster does not
// have.
func (s *Server) requireQueue(ctx context.Context, name string) *apiError {
	names, err := s.cfg.Backend.QueueNames(ctx)
	if err != nil {
		return backendError(err, name)
	}
	if !slices.Contains(names, name) {
		return errNoQueue(name)
	}
	return nil
}

// listPageMax is the most queue URLs ListQueues returns at once.
const listPageMax = 1000

func listQueues(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in listQueuesInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	limit := listPageMax
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > listPageMax {
			return nil, errInvalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and %d.", *in.MaxResults, listPageMax)
		}
		limit = *in.MaxResults
	}
	after := ""
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		if err != nil {
			return nil, errInvalidParameter("Invalid NextToken value %q.", in.NextToken)
		}
		after = string(b)
	}
	names, err := s.cfg.Backend.QueueNames(ctx)
	if err != nil {
		return nil, backendError(err, "")
	}
	out := listQueuesOutput{}
	for _, name := range names {
		if !strings.HasPrefix(name, in.QueueNamePrefix) || name <= after || checkQueueName(name) != nil {
			continue
		}
		if len(out.QueueUrls) == limit {
			// Only a paginated request is told there is more, as SQS does.
			if in.MaxResults != nil {
				out.NextToken = base64.RawURLEncoding.EncodeToString([]byte(out.QueueUrls[limit-1][strings.LastIndex(out.QueueUrls[limit-1], "/")+1:]))
			}
			break
		}
		out.QueueUrls = append(out.QueueUrls, s.queueURL(c, name))
	}
	return out, nil
}

func deleteQueue(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in queueInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	name, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	if c.key.Role != RoleAdmin {
		return nil, errAccessDenied(fmt.Sprintf("Access to the resource %s is denied: deleting a queue needs an access key with the admin role.", in.QueueUrl))
	}
	if err := s.cfg.Backend.DeleteQueue(ctx, name, c.key.Role); err != nil {
		return nil, backendError(err, name)
	}
	return emptyOutput{}, nil
}

func setQueueAttributes(ctx context.Context, s *Server, c *call) (any, *apiError) {
	var in setAttributesInput
	if aerr := c.decode(&in); aerr != nil {
		return nil, aerr
	}
	name, aerr := queueFromURL(c, in.QueueUrl)
	if aerr != nil {
		return nil, aerr
	}
	if len(in.Attributes) == 0 {
		return nil, errMissingParameter("Attribute.1.Name")
	}
	attrs := maps.Clone(in.Attributes)
	raw, redrive := attrs["RedrivePolicy"]
	delete(attrs, "RedrivePolicy")
	if aerr := checkSettable(attrs); aerr != nil {
		return nil, aerr
	}
	if aerr := s.requireQueue(ctx, name); aerr != nil {
		return nil, aerr
	}
	if !redrive {
		return emptyOutput{}, nil
	}
	// An empty policy removes the queue's, as SQS takes it. Messages
	// already moving to the old dead-letter queue still arrive there.
	var opts QueueOptions
	if raw != "" {
		if opts, aerr = s.redrivePolicy(ctx, name, raw); aerr != nil {
			return nil, aerr
		}
	}
	if err := s.cfg.Backend.SetRedrive(ctx, name, opts); err != nil {
		return nil, backendError(err, name)
	}
	return emptyOutput{}, nil
}

// redrivePolicy reads a RedrivePolicy attribute, SQS's JSON object
// naming the dead-letter queue by its ARN (deadLetterTargetArn) and the
// receive count after which a message moves there (maxReceiveCount, a
// number or a string of digits). The dead-letter queue must exist, in
// this endpoint's region and account, as SQS requires.
func (s *Server) redrivePolicy(ctx context.Context, queue, raw string) (QueueOptions, *apiError) {
	invalid := func(why string, args ...any) *apiError {
		return errInvalidAttributeValue("Value %s for parameter RedrivePolicy is invalid. Reason: %s.", raw, fmt.Sprintf(why, args...))
	}
	var p struct {
		Target string          `json:"deadLetterTargetArn"`
		Count  json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return QueueOptions{}, invalid("Redrive policy is not a valid JSON map")
	}
	count, err := strconv.Atoi(strings.Trim(string(p.Count), `"`))
	if err != nil || count < 1 || count > 1000 {
		return QueueOptions{}, invalid("Invalid value for maxReceiveCount: %s, valid values are from 1 to 1000 both inclusive", p.Count)
	}
	prefix := fmt.Sprintf("arn:aws:sqs:%s:%s:", s.cfg.Region, s.cfg.AccountID)
	name, ok := strings.CutPrefix(p.Target, prefix)
	if !ok || checkQueueName(name) != nil {
		return QueueOptions{}, invalid("Dead-letter target %q is not a queue ARN of this endpoint (%sNAME)", p.Target, prefix)
	}
	if name == queue {
		return QueueOptions{}, invalid("A queue cannot be its own dead-letter queue")
	}
	if s.requireQueue(ctx, name) != nil {
		return QueueOptions{}, invalid("Dead letter target does not exist")
	}
	return QueueOptions{DeadLetter: name, MaxReceiveCount: count}, nil
}

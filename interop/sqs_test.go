package interop

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/cairnmq/cairn/event"
)

// apiCode is the error code an SDK error carries.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// createQueue makes a queue and returns its URL.
func createQueue(t *testing.T, api *sqs.Client, name string) string {
	t.Helper()
	out, err := api.CreateQueue(ctxFor(t, 20*time.Second), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func TestInterop(t *testing.T) {
	c, log := startCluster(t)
	app := sdkFor(c, 0, AppKeyID, AppSecret)
	t.Run("QueueLifecycle", func(t *testing.T) { testQueueLifecycle(t, c, app) })
	t.Run("SendReceiveDelete", func(t *testing.T) { testSendReceiveDelete(t, c, app) })
	t.Run("LongPoll", func(t *testing.T) { testLongPoll(t, app) })
	t.Run("VisibilityAndRedelivery", func(t *testing.T) { testVisibility(t, log, app) })
	t.Run("BatchPartialFailures", func(t *testing.T) { testBatchFailures(t, c, app) })
	t.Run("ErrorCodes", func(t *testing.T) { testErrorCodes(t, c, app) })
	t.Run("AnyNodeServes", func(t *testing.T) { testAnyNodeServes(t, c, log) })
	t.Run("RedrivePolicy", func(t *testing.T) { testRedrive(t, app) })
	t.Run("SetRedrivePolicy", func(t *testing.T) { testSetRedrive(t, app) })
}

func testQueueLifecycle(t *testing.T, c *Cluster, app *sqs.Client) {
	url := createQueue(t, app, "life-a")
	if !strings.HasSuffix(url, "/000000000000/life-a") {
		t.Fatalf("queue URL %s", url)
	}
	// Creating it again answers the same URL, as SQS does for a queue
	// whose attributes match.
	if again := createQueue(t, app, "life-a"); again != url {
		t.Fatalf("second create answered %s, want %s", again, url)
	}
	createQueue(t, app, "life-b")
	createQueue(t, app, "other")
	ctx := ctxFor(t, 20*time.Second)
	got, err := app.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("life-b")})
	if err != nil || !strings.HasSuffix(aws.ToString(got.QueueUrl), "/life-b") {
		t.Fatalf("GetQueueUrl: %v, %v", got, err)
	}
	// Every node's endpoint knows the queue, whichever node owns it.
	for i := range c.Endpoints {
		if _, err := sdkFor(c, i, AppKeyID, AppSecret).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("life-a")}); err != nil {
			t.Fatalf("node %d's endpoint: %v", i+1, err)
		}
	}
	// Pages of one, by prefix.
	var listed []string
	p := sqs.NewListQueuesPaginator(app, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("life-"), MaxResults: aws.Int32(1)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, page.QueueUrls...)
	}
	if len(listed) != 2 || !strings.HasSuffix(listed[0], "/life-a") || !strings.HasSuffix(listed[1], "/life-b") {
		t.Fatalf("paginated ListQueues: %v", listed)
	}
	// Deleting needs an admin key.
	_, err = app.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	if apiCode(err) != "AccessDenied" {
		t.Fatalf("DeleteQueue with a client key: %v", err)
	}
	ops := sdkFor(c, 1, OpsKeyID, OpsSecret)
	if _, err := ops.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("DeleteQueue with an admin key: %v", err)
	}
	waitFor(t, 10*time.Second, "the deleted queue to vanish", func() bool {
		_, err := app.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("life-a")})
		var missing *types.QueueDoesNotExist
		return errors.As(err, &missing) && apiCode(err) == "AWS.SimpleQueueService.NonExistentQueue"
	})
}

// attributesDigest computes SQS's MD5 of message attributes here, apart
// from the endpoint's code, so the two must agree byte for byte.
func attributesDigest(attrs map[string]types.MessageAttributeValue) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf []byte
	lp := func(b []byte) { buf = binary.BigEndian.AppendUint32(buf, uint32(len(b))); buf = append(buf, b...) }
	for _, n := range names {
		a := attrs[n]
		lp([]byte(n))
		lp([]byte(aws.ToString(a.DataType)))
		if a.BinaryValue != nil {
			buf = append(buf, 2)
			lp(a.BinaryValue)
		} else {
			buf = append(buf, 1)
			lp([]byte(aws.ToString(a.StringValue)))
		}
	}
	sum := md5.Sum(buf)
	return hex.EncodeToString(sum[:])
}

func testSendReceiveDelete(t *testing.T, c *Cluster, app *sqs.Client) {
	url := createQueue(t, app, "orders")
	ctx := ctxFor(t, 60*time.Second)
	attrs := map[string]types.MessageAttributeValue{
		"customer": {DataType: aws.String("String"), StringValue: aws.String("ada")},
		"total":    {DataType: aws.String("Number.cents"), StringValue: aws.String("1250")},
		"blob":     {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff}},
	}
	sent, err := app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("first <order> & more"), MessageAttributes: attrs})
	if err != nil {
		t.Fatal(err) // the SDK has checked MD5OfMessageBody
	}
	if got, want := aws.ToString(sent.MD5OfMessageAttributes), attributesDigest(attrs); got != want {
		t.Fatalf("MD5OfMessageAttributes %s, want %s", got, want)
	}
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("m%d", i)), MessageBody: aws.String(fmt.Sprintf("batch %d", i)),
			MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i))}}})
	}
	batch, err := app.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(batch.Successful) != 10 || len(batch.Failed) != 0 {
		t.Fatalf("SendMessageBatch: %+v, %v", batch, err)
	}
	// Receive through another node's endpoint: the queue's owner may be
	// any node.
	other := sdkFor(c, 2, AppKeyID, AppSecret)
	bodies := map[string]types.Message{}
	for len(bodies) < 11 {
		out, err := other.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 5,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("long poll came back empty with %d of 11 received", len(bodies))
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			bodies[aws.ToString(m.Body)] = m
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		res, err := other.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
		if err != nil || len(res.Failed) != 0 {
			t.Fatalf("DeleteMessageBatch: %+v, %v", res, err)
		}
	}
	first, ok := bodies["first <order> & more"]
	if !ok {
		t.Fatalf("the first message is missing from %v", bodies)
	}
	if aws.ToString(first.MessageId) != aws.ToString(sent.MessageId) || aws.ToString(first.MD5OfMessageAttributes) != attributesDigest(attrs) ||
		string(first.MessageAttributes["blob"].BinaryValue) != "\x00\x01\x02\xff" || aws.ToString(first.MessageAttributes["total"].StringValue) != "1250" {
		t.Fatalf("received %+v", first)
	}
	if first.Attributes["ApproximateReceiveCount"] != "1" || first.Attributes["SenderId"] != AppKeyID || first.Attributes["SentTimestamp"] == "" {
		t.Fatalf("system attributes %v", first.Attributes)
	}
	// Everything was deleted: the owner counts nothing left.
	waitFor(t, 10*time.Second, "the queue to count nothing", func() bool {
		a, err := app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
		return err == nil && a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" &&
			a.Attributes["QueueArn"] == "arn:aws:sqs:"+Region+":000000000000:orders"
	})
}

func testLongPoll(t *testing.T, app *sqs.Client) {
	url := createQueue(t, app, "poll")
	ctx := ctxFor(t, 30*time.Second)
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	start := time.Now()
	go func() {
		out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 15})
		got <- result{out, err, time.Now()}
	}()
	time.Sleep(time.Second)
	if _, err := app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("wake up")}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != "wake up" {
		t.Fatalf("long poll: %+v, %v", r.out, r.err)
	}
	if waited := r.at.Sub(start); waited > 10*time.Second {
		t.Fatalf("the long poll answered after %v, not when the message arrived", waited)
	}
	// An empty queue holds a long poll for its whole wait.
	begin := time.Now()
	out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2})
	if err != nil || len(out.Messages) != 0 || time.Since(begin) < 2*time.Second {
		t.Fatalf("empty long poll: %+v, %v after %v", out, err, time.Since(begin))
	}
}

func testVisibility(t *testing.T, log *nodeLog, app *sqs.Client) {
	url := createQueue(t, app, "visible")
	ctx := ctxFor(t, 60*time.Second)
	if _, err := app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("again")}); err != nil {
		t.Fatal(err)
	}
	receive := func(vis int32) types.Message {
		t.Helper()
		out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 10, VisibilityTimeout: vis,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive (visibility %d s): %d messages, %v", vis, len(out.Messages), err)
		}
		return out.Messages[0]
	}
	first := receive(2)
	// Not deleted, it is delivered again once its 2 s are up.
	second := receive(2)
	if aws.ToString(second.MessageId) != aws.ToString(first.MessageId) || second.Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("redelivery: %+v after %+v", second, first)
	}
	// Extended past its 2 s, it is not delivered again meanwhile.
	if _, err := app.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second.ReceiptHandle, VisibilityTimeout: 5}); err != nil {
		skipIfOwnerSteppedBack(t, log, "visible", err)
		t.Fatalf("ChangeMessageVisibility 5: %v", err)
	}
	hidden, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 3})
	if err != nil || len(hidden.Messages) != 0 {
		t.Fatalf("within its extended visibility the message was received again: %+v, %v", hidden.Messages, err)
	}
	// 0 hands it back at once.
	if _, err := app.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		skipIfOwnerSteppedBack(t, log, "visible", err)
		t.Fatalf("ChangeMessageVisibility 0: %v", err)
	}
	released := time.Now()
	third := receive(2)
	if third.Attributes["ApproximateReceiveCount"] != "3" || time.Since(released) > 1500*time.Millisecond {
		t.Fatalf("after a release: %+v after %v", third, time.Since(released))
	}
	if _, err := app.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: third.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	// Deleted, it is gone; deleting it again succeeds, as in SQS, and
	// its lease can no longer be changed.
	out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 3})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("after delete: %+v, %v", out, err)
	}
	if _, err := app.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: third.ReceiptHandle}); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	_, err = app.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: third.ReceiptHandle, VisibilityTimeout: 5})
	var invalid *types.ReceiptHandleIsInvalid
	if !errors.As(err, &invalid) {
		t.Fatalf("a visibility change after the delete: %v", err)
	}
}

// skipIfOwnerSteppedBack skips a test whose receipt handle went stale
// because the queue's owner stepped back: an owner that hears from no
// quorum of its replicas for the 60 ms delivery lease hands its leases
// back, and the message goes out again. That is the one way cairn ends a
// lease before its visibility timeout, and a slow sync on a loaded
// machine can cause it (one run in three on a shared CI machine failed
// this way, unexplained until the nodes' warnings were kept). It is told
// apart by the owner's own warning for the queue and by nothing else: any
// other stale handle fails the test.
func skipIfOwnerSteppedBack(t *testing.T, log *nodeLog, queue string, err error) {
	t.Helper()
	var invalid *types.ReceiptHandleIsInvalid
	if errors.As(err, &invalid) && log.contains("msg="+string(event.QueueQuorumLost), "q="+queue+" ") {
		t.Skipf("the owner of %s lost its quorum during the test and handed its leases back, as it must: %v", queue, err)
	}
}

// testRedrive creates a queue whose messages move to a dead-letter queue
// after two receives, as an application configures SQS, and follows a
// message there: received twice and handed back each time, it is next
// received from the dead-letter queue, with the same body and ID, and
// not from its source.
func testRedrive(t *testing.T, app *sqs.Client) {
	ctx := ctxFor(t, 60*time.Second)
	deadURL := createQueue(t, app, "poison-dlq")
	attrs, err := app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(deadURL),
		AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, attrs.Attributes["QueueArn"])
	created, err := app.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("poison"),
		Attributes: map[string]string{"RedrivePolicy": policy}})
	if err != nil {
		t.Fatalf("CreateQueue with a RedrivePolicy: %v", err)
	}
	url := aws.ToString(created.QueueUrl)
	got, err := app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: created.QueueUrl,
		AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
	if err != nil || !strings.Contains(got.Attributes["RedrivePolicy"], attrs.Attributes["QueueArn"]) {
		t.Fatalf("GetQueueAttributes RedrivePolicy: %v, %v", got, err)
	}
	sent, err := app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: created.QueueUrl, MessageBody: aws.String("cannot be handled")})
	if err != nil {
		t.Fatal(err)
	}
	receive := func(url string) []types.Message {
		t.Helper()
		out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 3, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	for i := range 2 {
		ms := receive(url)
		if len(ms) != 1 || aws.ToString(ms[0].MessageId) != aws.ToString(sent.MessageId) {
			t.Fatalf("receive %d from the source: %+v", i+1, ms)
		}
		if _, err := app.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
			ReceiptHandle: ms[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if ms := receive(url); len(ms) != 0 {
		t.Fatalf("received from the source a third time: %+v", ms)
	}
	ms := receive(deadURL)
	if len(ms) != 1 || aws.ToString(ms[0].MessageId) != aws.ToString(sent.MessageId) || aws.ToString(ms[0].Body) != "cannot be handled" {
		t.Fatalf("the dead-letter queue gave %+v, want the message sent", ms)
	}
}

func testBatchFailures(t *testing.T, c *Cluster, app *sqs.Client) {
	url := createQueue(t, app, "batches")
	ctx := ctxFor(t, 60*time.Second)
	out, err := app.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("good"), MessageBody: aws.String("fine")},
		{Id: aws.String("late"), MessageBody: aws.String("too late"), DelaySeconds: 901},
		{Id: aws.String("fifo"), MessageBody: aws.String("grouped"), MessageGroupId: aws.String("g")},
	}})
	if err != nil || len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "good" || len(out.Failed) != 2 {
		t.Fatalf("SendMessageBatch: %+v, %v", out, err)
	}
	for _, f := range out.Failed {
		if aws.ToString(f.Code) != "InvalidParameterValue" || !f.SenderFault {
			t.Fatalf("failed entry %+v", f)
		}
	}
	_, err = app.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("x"), MessageBody: aws.String("a")}, {Id: aws.String("x"), MessageBody: aws.String("b")}}})
	var dup *types.BatchEntryIdsNotDistinct
	if !errors.As(err, &dup) {
		t.Fatalf("repeated IDs: %v", err)
	}
	got, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 10})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("receive: %+v, %v", got, err)
	}
	h := aws.ToString(got.Messages[0].ReceiptHandle)
	forged := h[:len(h)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(h, "AA")]
	del, err := app.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("real"), ReceiptHandle: aws.String(h)}, {Id: aws.String("forged"), ReceiptHandle: aws.String(forged)}}})
	if err != nil || len(del.Successful) != 1 || len(del.Failed) != 1 || aws.ToString(del.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("DeleteMessageBatch: %+v, %v", del, err)
	}
	// Another node's endpoint refuses the forged handle too.
	if _, err := sdkFor(c, 1, AppKeyID, AppSecret).DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(forged)}); apiCode(err) != "ReceiptHandleIsInvalid" {
		t.Fatalf("a forged handle at another node: %v", err)
	}
}

// testAnyNodeServes uses the three endpoints as a load balancer that
// keeps no client on one node would: messages sent through one node are
// received through a second, and their visibility changes and deletes go
// through whichever node comes next. Every handle works everywhere.
func testAnyNodeServes(t *testing.T, c *Cluster, log *nodeLog) {
	nodes := []*sqs.Client{sdkFor(c, 0, AppKeyID, AppSecret), sdkFor(c, 1, AppKeyID, AppSecret), sdkFor(c, 2, AppKeyID, AppSecret)}
	url := aws.String(createQueue(t, nodes[0], "anynode"))
	ctx := ctxFor(t, 60*time.Second)
	for _, body := range []string{"delete", "release", "shorten"} {
		if _, err := nodes[0].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// receive polls the nodes in turn, as a load balancer spreads the
	// polls: a message handed back goes to whichever endpoint's buffer
	// has room, and waits there for that endpoint's next receive.
	receive := func(at int, want int, rotate bool) map[string]types.Message {
		t.Helper()
		got := map[string]types.Message{}
		for deadline := time.Now().Add(15 * time.Second); len(got) < want; {
			if rotate {
				at = (at + 1) % len(nodes)
			}
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d messages", len(got), want)
			}
			out, err := nodes[at].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2, VisibilityTimeout: 30,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				got[aws.ToString(m.Body)] = m
			}
		}
		return got
	}
	handle := func(m types.Message) *string { return m.ReceiptHandle }
	got := receive(1, 3, false) // n2's endpoint makes every handle
	if _, err := nodes[2].DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle(got["delete"])}); err != nil {
		t.Fatalf("a delete at n3 of n2's handle: %v", err)
	}
	if _, err := nodes[0].ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle(got["release"]), VisibilityTimeout: 0}); err != nil {
		skipIfOwnerSteppedBack(t, log, "anynode", err)
		t.Fatalf("a release at n1 of n2's handle: %v", err)
	}
	if _, err := nodes[2].ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: handle(got["shorten"]), VisibilityTimeout: 2}); err != nil {
		skipIfOwnerSteppedBack(t, log, "anynode", err)
		t.Fatalf("n3 shortening n2's 30 s visibility to 2 s: %v", err)
	}
	// The two handed back come again, and the deleted one does not.
	again := receive(2, 2, true)
	for body, m := range again {
		if body == "delete" || m.Attributes["ApproximateReceiveCount"] < "2" {
			t.Fatalf("received again %q, %v; want release and shorten, each again", body, m.Attributes)
		}
	}
	for i, body := range []string{"release", "shorten"} {
		if _, err := nodes[i].DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: handle(again[body])}); err != nil {
			t.Fatalf("deleting %s at n%d: %v", body, i+1, err)
		}
	}
	waitFor(t, 10*time.Second, "the queue to count nothing", func() bool {
		a, err := nodes[1].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []types.QueueAttributeName{"All"}})
		return err == nil && a.Attributes["ApproximateNumberOfMessages"] == "0" && a.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0"
	})
}

// codeCase is a call's error and the code SQS would answer it with.
type codeCase struct {
	name string
	err  error
	code string
}

func testErrorCodes(t *testing.T, c *Cluster, app *sqs.Client) {
	ctx := ctxFor(t, 30*time.Second)
	var cases []codeCase
	check := func(name, code string) func(any, error) {
		return func(_ any, err error) { cases = append(cases, codeCase{name, err, code}) }
	}
	missing := aws.String("http://x/000000000000/nowhere")
	check("wrong secret", "SignatureDoesNotMatch")(sdkFor(c, 0, AppKeyID, "not-the-secret").ListQueues(ctx, &sqs.ListQueuesInput{}))
	check("unknown key", "InvalidClientTokenId")(sdkFor(c, 0, "AKIDNOBODY", AppSecret).ListQueues(ctx, &sqs.ListQueuesInput{}))
	check("purge", "AWS.SimpleQueueService.NonExistentQueue")(app.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: missing}))
	check("redrive policy", "InvalidAttributeValue")(app.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq-source"),
		Attributes: map[string]string{"RedrivePolicy": `{"maxReceiveCount":"3"}`}}))
	check("fifo", "AWS.SimpleQueueService.UnsupportedOperation")(app.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}}))
	check("missing queue", "AWS.SimpleQueueService.NonExistentQueue")(app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: missing, MessageBody: aws.String("x")}))
	check("too many", "InvalidParameterValue")(app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: missing, MaxNumberOfMessages: 11}))
	check("unknown attribute", "InvalidAttributeName")(app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: missing,
		AttributeNames: []types.QueueAttributeName{"Colour"}}))
	for _, tc := range cases {
		if apiCode(tc.err) != tc.code {
			t.Errorf("%s: %v, want code %s", tc.name, tc.err, tc.code)
		}
	}
	if !slices.ContainsFunc(cases, func(c codeCase) bool {
		return strings.Contains(fmt.Sprint(c.err), "is not a queue ARN of this endpoint")
	}) {
		t.Errorf("no refusal names the redrive policy's missing dead-letter target")
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

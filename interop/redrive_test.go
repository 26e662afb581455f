package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// testSetRedrive gives a queue created without a RedrivePolicy one with
// SetQueueAttributes, as an application adds a dead-letter queue to a
// queue in service: GetQueueAttributes gives it back and a message
// received once and handed back moves to the dead-letter queue. An
// empty RedrivePolicy then removes it: GetQueueAttributes names none,
// and a message handed back twice stays in its queue.
func testSetRedrive(t *testing.T, app *sqs.Client) {
	ctx := ctxFor(t, 150*time.Second)
	deadURL := createQueue(t, app, "later-dlq")
	url := createQueue(t, app, "later")
	dead, err := app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(deadURL),
		AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	arn := dead.Attributes["QueueArn"]
	setPolicy := func(policy string) {
		t.Helper()
		if _, err := app.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
			Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
			t.Fatalf("SetQueueAttributes RedrivePolicy %q: %v", policy, err)
		}
	}
	policyNow := func() string {
		t.Helper()
		got, err := app.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
		if err != nil {
			t.Fatal(err)
		}
		return got.Attributes["RedrivePolicy"]
	}
	// receive long-polls until a message comes or 30 s pass. One 3 s
	// poll was not always enough: on a loaded machine a hand-back and
	// the move to the dead-letter queue can take longer than that to
	// commit, and an empty answer then says nothing about the redrive.
	receive := func(url string) []types.Message {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := app.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 3, VisibilityTimeout: 30})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) > 0 || time.Now().After(deadline) {
				return out.Messages
			}
		}
	}
	handBack := func(m types.Message) {
		t.Helper()
		if _, err := app.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
			ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(body string) string {
		t.Helper()
		sent, err := app.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(sent.MessageId)
	}

	if p := policyNow(); p != "" {
		t.Fatalf("a queue created without a RedrivePolicy has %q", p)
	}
	setPolicy(fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, arn))
	if p := policyNow(); !strings.Contains(p, arn) || !strings.Contains(p, `"maxReceiveCount":1`) {
		t.Fatalf("GetQueueAttributes after the set: RedrivePolicy %q", p)
	}
	poison := send("cannot be handled")
	if ms := receive(url); len(ms) != 1 || aws.ToString(ms[0].MessageId) != poison {
		t.Fatalf("the first receive: %+v", ms)
	} else {
		handBack(ms[0])
	}
	if ms := receive(deadURL); len(ms) != 1 || aws.ToString(ms[0].MessageId) != poison {
		t.Fatalf("the dead-letter queue gave %+v, want the message received once", ms)
	}

	setPolicy("")
	if p := policyNow(); p != "" {
		t.Fatalf("GetQueueAttributes after the removal: RedrivePolicy %q", p)
	}
	fine := send("handled eventually")
	for i := range 3 {
		ms := receive(url)
		if len(ms) != 1 || aws.ToString(ms[0].MessageId) != fine {
			t.Fatalf("receive %d after the removal: %+v", i+1, ms)
		}
		handBack(ms[0])
	}
}

package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cairnmq/cairn/live/status"
)

// procNode is one cairn-node process with its SQS endpoint.
type procNode struct {
	id       int
	httpAddr string
	sqsAddr  string
	cmd      *exec.Cmd
	log      string
}

// startProcesses builds cairn-node and runs three of them on loopback,
// each serving an SQS endpoint, until the test ends.
func startProcesses(t *testing.T) []*procNode {
	t.Helper()
	dir := t.TempDir()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build cairn-node with")
	}
	bin := filepath.Join(dir, "cairn-node")
	if out, err := exec.Command(goTool, "build", "-C", "..", "-buildvcs=false", "-o", bin, "./cmd/cairn-node").CombinedOutput(); err != nil {
		t.Fatalf("building cairn-node: %v\n%s", err, out)
	}
	addrs := freeAddrs(t, 12)
	var peers strings.Builder
	for i := range 3 {
		fmt.Fprintf(&peers, "[[peers]]\nid = %d\naddr = %q\nclient_addr = %q\nhttp_addr = %q\n\n", i+1, addrs[4*i], addrs[4*i+1], addrs[4*i+2])
	}
	var nodes []*procNode
	for i := range 3 {
		nd := &procNode{id: i + 1, httpAddr: addrs[4*i+2], sqsAddr: addrs[4*i+3], log: filepath.Join(dir, fmt.Sprintf("n%d.log", i+1))}
		text := fmt.Sprintf(`id = %d
data_dir = "n%d"
peer_secret = %q
client_secret = %q
admin_secret = %q
log_level = "info"
sqs_listen = %q

[sqs]
region = %q

[[sqs.keys]]
id = %q
secret = %q

%s`, nd.id, nd.id, PeerSecret, ClientSecret, AdminSecret, nd.sqsAddr, Region, AppKeyID, AppSecret, peers.String())
		config := filepath.Join(dir, fmt.Sprintf("n%d.toml", nd.id))
		if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(nd.log)
		if err != nil {
			t.Fatal(err)
		}
		nd.cmd = exec.Command(bin, "--config", config)
		nd.cmd.Stdout, nd.cmd.Stderr = logf, logf
		if err := nd.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { nd.cmd.Wait(); logf.Close() }()
		nodes = append(nodes, nd)
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.cmd.Process.Kill()
		}
		if t.Failed() {
			for _, nd := range nodes {
				b, _ := os.ReadFile(nd.log)
				t.Logf("n%d log tail:\n%s", nd.id, tail(string(b), 3000))
			}
		}
	})
	return nodes
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// ownerOf asks the nodes' status which node owns queue.
func ownerOf(t *testing.T, nodes []*procNode, queue string) int {
	t.Helper()
	for _, nd := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := status.FetchAuth(ctx, nd.httpAddr, status.Auth{Secret: ClientSecret})
		cancel()
		if err != nil {
			continue
		}
		for _, q := range st.Queues {
			if q.Name == queue && q.Active {
				return int(st.ID)
			}
		}
	}
	return 0
}

// TestFailoverDuringSQSLoop SIGKILLs a queue's owner while a producer
// sends batches and a consumer receives and deletes through another
// node's SQS endpoint. Every message whose send succeeded must be
// received (none lost), and none whose delete succeeded may be received
// again; other messages received twice are counted, not failed. A
// delete whose outcome stayed unknown may have deleted the message or
// not: if not, the message comes back and is deleted again, so the loop
// waits until every message is deleted or has stayed away for two
// visibility timeouts.
func TestFailoverDuringSQSLoop(t *testing.T) {
	runFailoverLoop(t, func(nodes []*procNode, owner int) (*sqs.Client, string) {
		survivor := nodes[owner%3] // any node but the owner
		return sdkAt(survivor.sqsAddr, AppKeyID, AppSecret), fmt.Sprintf("n%d's endpoint", survivor.id)
	})
}

// TestFailoverBehindALoadBalancer runs the same loop with every request
// spread over the three endpoints in turn, as a load balancer that keeps
// no client on one node does, the dead node's skipped once its port
// refuses. So messages are received through the owner's own endpoint
// until it dies, and the handles it made are deleted through the others.
func TestFailoverBehindALoadBalancer(t *testing.T) {
	runFailoverLoop(t, func(nodes []*procNode, _ int) (*sqs.Client, string) {
		var addrs []string
		for _, nd := range nodes {
			addrs = append(addrs, nd.sqsAddr)
		}
		return sdkBehind(addrs), "every endpoint in turn"
	})
}

// runFailoverLoop is the loop of TestFailoverDuringSQSLoop; app picks the
// application's SQS client once the queue's owner is known, and says
// which endpoints it uses.
func runFailoverLoop(t *testing.T, app func(nodes []*procNode, owner int) (*sqs.Client, string)) {
	nodes := startProcesses(t)
	waitFor(t, 60*time.Second, "every SQS endpoint to serve", func() bool {
		for _, nd := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err := sdkAt(nd.sqsAddr, AppKeyID, AppSecret).ListQueues(ctx, &sqs.ListQueuesInput{})
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	})
	ctx := ctxFor(t, 90*time.Second)
	created, err := sdkAt(nodes[0].sqsAddr, AppKeyID, AppSecret).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("failover")})
	if err != nil {
		t.Fatal(err)
	}
	url := created.QueueUrl
	var owner int
	waitFor(t, 10*time.Second, "the queue's owner", func() bool { owner = ownerOf(t, nodes, "failover"); return owner != 0 })
	api, uses := app(nodes, owner)
	t.Logf("owner n%d; the application uses %s", owner, uses)

	const batches = 60
	l := &loopLedger{sent: map[string]bool{}, received: map[string]int{}, deleted: map[string]bool{}, deletedIDs: map[string]bool{}}
	var wg sync.WaitGroup
	sendDone := make(chan struct{})
	wg.Go(func() { defer close(sendDone); l.produce(ctx, t, api, url, batches) })
	wg.Go(func() { l.consume(ctx, t, api, url, sendDone) })
	waitFor(t, 60*time.Second, "a third of the batches to be sent", func() bool { return l.sentCount() >= batches*10/3 })
	if err := nodes[owner-1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, undeleted := 0, 0
	for body := range l.sent {
		if l.received[body] == 0 {
			lost++
		}
		if !l.deleted[body] {
			undeleted++
		}
	}
	redelivered := 0
	for body, n := range l.received {
		if !l.sent[body] && !l.unknown[body] {
			t.Errorf("received %q, which was never sent", body)
		}
		redelivered += n - 1
	}
	t.Logf("%d sends succeeded, %d ended unknown (retried as new sends), %d deleted, %d whose delete's outcome stayed unknown "+
		"and that never came back, %d redeliveries, %d send errors; the last delete %v after the kill",
		len(l.sent), len(l.unknown), len(l.deleted), undeleted, redelivered, l.sendErrors, l.lastDelete.Sub(killedAt).Round(time.Millisecond))
	if lost > 0 {
		var missing []string
		for body := range l.sent {
			if l.received[body] == 0 {
				missing = append(missing, fmt.Sprintf("%s (received %d times)", body, l.received[body]))
			}
		}
		slices.Sort(missing)
		t.Fatalf("%d messages whose send succeeded were never received: %v", lost, missing[:min(len(missing), 20)])
	}
}

// loopLedger is what the application saw.
type loopLedger struct {
	mu         sync.Mutex
	sent       map[string]bool // sends answered with success
	unknown    map[string]bool // sends answered with an error (they may exist)
	received   map[string]int
	deleted    map[string]bool
	deletedIDs map[string]bool // message IDs whose delete succeeded
	sendErrors int
	lastDelete time.Time
}

func (l *loopLedger) sentCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent)
}

// produce sends batches of ten, one batch at a time; an entry that fails
// is sent again under a new body, the old one noted as unknown.
func (l *loopLedger) produce(ctx context.Context, t *testing.T, api *sqs.Client, url *string, batches int) {
	seq := 0
	for b := 0; b < batches && ctx.Err() == nil; {
		var entries []types.SendMessageBatchRequestEntry
		for i := range 10 {
			seq++
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m-" + strconv.Itoa(seq))})
		}
		out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries})
		l.mu.Lock()
		if l.unknown == nil {
			l.unknown = map[string]bool{}
		}
		if err != nil {
			l.sendErrors++
			for _, e := range entries {
				l.unknown[aws.ToString(e.MessageBody)] = true
			}
			l.mu.Unlock()
			continue
		}
		ok := map[string]bool{}
		for _, s := range out.Successful {
			ok[aws.ToString(s.Id)] = true
		}
		for _, e := range entries {
			if ok[aws.ToString(e.Id)] {
				l.sent[aws.ToString(e.MessageBody)] = true
			} else {
				l.sendErrors++
				l.unknown[aws.ToString(e.MessageBody)] = true
			}
		}
		l.mu.Unlock()
		b++
		// Paced, so the owner dies in the middle of the loop rather than
		// after it.
		time.Sleep(30 * time.Millisecond)
	}
}

// consumeVisibility is the consumer's visibility timeout.
const consumeVisibility = 10 * time.Second

// consume receives and deletes until sending is over and every message
// sent has been deleted, or nothing came for two visibility timeouts, or
// ctx ends.
func (l *loopLedger) consume(ctx context.Context, t *testing.T, api *sqs.Client, url *string, sendDone <-chan struct{}) {
	quietSince := time.Time{}
	for ctx.Err() == nil {
		select {
		case <-sendDone:
			if l.allDeleted() || !quietSince.IsZero() && time.Since(quietSince) > 2*consumeVisibility {
				return
			}
		default:
		}
		out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
			VisibilityTimeout: int32(consumeVisibility / time.Second)})
		if err != nil || len(out.Messages) == 0 {
			if quietSince.IsZero() {
				quietSince = time.Now()
			}
			continue
		}
		quietSince = time.Time{}
		var del []types.DeleteMessageBatchRequestEntry
		l.mu.Lock()
		for i, m := range out.Messages {
			if l.deletedIDs[aws.ToString(m.MessageId)] {
				t.Errorf("%s (%s) was received again after its delete succeeded", aws.ToString(m.Body), aws.ToString(m.MessageId))
			}
			l.received[aws.ToString(m.Body)]++
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		l.mu.Unlock()
		l.deleteAll(ctx, t, api, url, out.Messages, del)
	}
}

// deleteAll deletes a received batch, retrying entries that failed for a
// reason other than a lost lease (a lost lease means the message will be
// delivered again), as an application would.
func (l *loopLedger) deleteAll(ctx context.Context, t *testing.T, api *sqs.Client, url *string, msgs []types.Message, del []types.DeleteMessageBatchRequestEntry) {
	for attempt := 0; attempt < 5 && len(del) > 0 && ctx.Err() == nil; attempt++ {
		res, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: del})
		if err != nil {
			t.Logf("DeleteMessageBatch: %v", err)
			continue
		}
		l.mu.Lock()
		for _, s := range res.Successful {
			i, _ := strconv.Atoi(aws.ToString(s.Id))
			l.deleted[aws.ToString(msgs[i].Body)] = true
			l.deletedIDs[aws.ToString(msgs[i].MessageId)] = true
		}
		l.lastDelete = time.Now()
		l.mu.Unlock()
		var retry []types.DeleteMessageBatchRequestEntry
		for _, f := range res.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			t.Logf("deleting %s failed: %s: %s", aws.ToString(msgs[i].Body), aws.ToString(f.Code), aws.ToString(f.Message))
			if aws.ToString(f.Code) != "ReceiptHandleIsInvalid" {
				retry = append(retry, del[i])
			}
		}
		del = retry
	}
}

func (l *loopLedger) allDeleted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for body := range l.sent {
		if !l.deleted[body] {
			return false
		}
	}
	return true
}

// TestHandlesOutliveTheirEndpoint receives messages through the queue's
// owner's own endpoint and more through another node's, SIGKILLs the
// owner, and deletes them all through the other node's endpoint. The
// first handles name a dead endpoint and a dead owner's leases; the
// others name live records whose acks go to the dead owner first. Every
// delete still settles its message at the new owner, which never
// delivers it again. A visibility change of such a handle is refused:
// its lease died with the owner. The message left undeleted comes back
// counted as received twice: the dead owner's followers heard its count.
func TestHandlesOutliveTheirEndpoint(t *testing.T) {
	nodes := startProcesses(t)
	ctx := ctxFor(t, 90*time.Second)
	var url *string
	waitFor(t, 60*time.Second, "a queue to be made", func() bool {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		api := sdkAt(nodes[0].sqsAddr, AppKeyID, AppSecret)
		// A queue without a redrive policy: its owner tells its followers
		// its receive counts all the same, which the check of the
		// redelivery below reads.
		out, err := api.CreateQueue(c, &sqs.CreateQueueInput{QueueName: aws.String("outlive")})
		if err != nil {
			return false // the endpoint is still connecting to its node
		}
		url = out.QueueUrl
		return true
	})
	var owner int
	waitFor(t, 10*time.Second, "the queue's owner", func() bool { owner = ownerOf(t, nodes, "outlive"); return owner != 0 })
	dying, other := sdkAt(nodes[owner-1].sqsAddr, AppKeyID, AppSecret), sdkAt(nodes[owner%3].sqsAddr, AppKeyID, AppSecret)
	send := func(from int) {
		var entries []types.SendMessageBatchRequestEntry
		for i := range 10 {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m-" + strconv.Itoa(from+i))})
		}
		if out, err := other.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries}); err != nil || len(out.Failed) != 0 {
			t.Fatalf("SendMessageBatch: %+v, %v", out, err)
		}
	}
	// receive receives until it has want messages or 10 s passed.
	receive := func(api *sqs.Client, want int) []types.Message {
		var got []types.Message
		for deadline := time.Now().Add(10 * time.Second); len(got) < want && time.Now().Before(deadline); {
			out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2, VisibilityTimeout: 30})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out.Messages...)
		}
		return got
	}
	// The first ten all go to the owner's endpoint; of the next ten, the
	// owner splits what it pushes between the two endpoints' buffers.
	// Every lease is longer than the test, so what comes back comes from
	// the failover.
	send(0)
	atOwner := receive(dying, 10)
	if len(atOwner) != 10 {
		t.Fatalf("received %d of the first 10 through the owner's endpoint", len(atOwner))
	}
	// A first receive at the other endpoint subscribes its buffer, so the
	// owner has two subscriptions to split the next ten between.
	if out, err := other.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, VisibilityTimeout: 30}); err != nil || len(out.Messages) != 0 {
		t.Fatalf("a receive with every message leased: %+v, %v", out, err)
	}
	send(10)
	atOther := receive(other, 1) // none if the owner gave all ten to the first buffer; the rest still holds
	t.Logf("the other endpoint received %d of the next ten before the kill", len(atOther))
	if err := nodes[owner-1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	// The first deletes may meet the failover; an application retries
	// what fails, as the loop above does. A batch takes ten at most.
	l := &loopLedger{deleted: map[string]bool{}, deletedIDs: map[string]bool{}}
	for _, msgs := range [][]types.Message{atOwner[:9], atOther} {
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range msgs {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		l.deleteAll(ctx, t, other, url, msgs, del)
	}
	if len(l.deleted) != 9+len(atOther) {
		t.Fatalf("%d of %d deletes through n%d succeeded", len(l.deleted), 9+len(atOther), nodes[owner%3].id)
	}
	t.Logf("9 deletes of a dead endpoint's handles and %d of n%d's own settled %v after the kill", len(atOther), nodes[owner%3].id,
		l.lastDelete.Sub(killedAt).Round(time.Millisecond))
	_, err := other.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: atOwner[9].ReceiptHandle, VisibilityTimeout: 60})
	if apiCode(err) != "ReceiptHandleIsInvalid" {
		t.Fatalf("extending a lease of the dead owner: %v, want ReceiptHandleIsInvalid", err)
	}
	// What was not deleted comes back once the failover made it ready
	// again, and nothing deleted does; two more long polls after the last
	// find nothing.
	want := map[string]bool{}
	for i := range 20 {
		want["m-"+strconv.Itoa(i)] = !l.deleted["m-"+strconv.Itoa(i)]
	}
	var again []string
	lastBody := aws.ToString(atOwner[9].Body)
	for polls, deadline := 0, time.Now().Add(20*time.Second); polls < 2 && time.Now().Before(deadline); {
		out, err := other.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			again = append(again, aws.ToString(m.Body))
			// Received once before the kill: the new owner counts on
			// from what the dead one's appends told its followers.
			if n := m.Attributes["ApproximateReceiveCount"]; aws.ToString(m.Body) == lastBody && n != "2" {
				t.Errorf("%s came back after the failover with ApproximateReceiveCount %s, want 2", lastBody, n)
			}
		}
		if len(out.Messages) == 0 && len(again) > 0 {
			polls++
		}
	}
	slices.Sort(again)
	var wanted []string
	for body, back := range want {
		if back {
			wanted = append(wanted, body)
		}
	}
	slices.Sort(wanted)
	if !slices.Equal(again, wanted) {
		t.Fatalf("received again after the deletes: %v; want %v", again, wanted)
	}
}

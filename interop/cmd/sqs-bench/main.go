// Command sqs-bench measures cairn's SQS endpoint against cairn's own Go
// client on the same cluster, side by side, and prints the endpoint's
// rates as ratios of the native client's.
//
// Each round starts a fresh three-node cluster in this process (the
// nodes and their SQS endpoints, on loopback), then, on a queue of its
// own each, in turn: the native client publishes --messages messages
// with --in-flight publishes outstanding and drains them with a
// subscription that acks each delivery (Ack, which batches acks; the
// drain ends when Flush reports every ack answered, so the settles are
// durable, as an SQS delete's are when it answers); the AWS SDK sends the same
// number in batches of ten from --senders goroutines (--senders × 10
// messages outstanding) and drains them with --receivers goroutines that
// receive ten at a time and delete each batch. Which side goes first
// alternates by round.
//
//	go run ./cmd/sqs-bench --messages 10000 --rounds 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cairnmq/cairn/client"
	"github.com/cairnmq/cairn/interop"
)

// config is the benchmark's flags.
type config struct {
	messages, rounds, inFlight, senders, receivers, size int
	// profile is where the CPU profile of the last round's SQS drain
	// goes; empty for none.
	profile string
}

func main() {
	var c config
	flag.IntVar(&c.messages, "messages", 10000, "messages sent and drained per side per round")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds, each on a fresh cluster")
	flag.IntVar(&c.inFlight, "in-flight", 256, "native publishes outstanding at once")
	flag.IntVar(&c.senders, "senders", 26, "SQS goroutines sending batches of ten")
	flag.IntVar(&c.receivers, "receivers", 8, "SQS goroutines receiving and deleting ten at a time")
	flag.IntVar(&c.size, "size", 100, "message body bytes")
	flag.StringVar(&c.profile, "cpu-profile", "", "write the CPU profile of the last round's SQS drain (the whole process: SDK, endpoint, nodes) to this file")
	flag.Parse()
	if c.messages < 10 || c.rounds < 1 || c.inFlight < 1 || c.senders < 1 || c.receivers < 1 || c.size < 1 {
		fmt.Fprintln(os.Stderr, "sqs-bench: every flag must be positive, and --messages at least 10")
		os.Exit(64)
	}
	fmt.Printf("sqs-bench: %d messages of %d bytes per side per round; native: %d publishes in flight, Ack then Flush; "+
		"SQS: %d senders of batches of 10, %d receivers (10 at a time, batch delete)\n", c.messages, c.size, c.inFlight, c.senders, c.receivers)
	var sendRatios, drainRatios []float64
	for r := range c.rounds {
		native, endpoint, err := round(c, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sqs-bench:", err)
			os.Exit(1)
		}
		sendRatios = append(sendRatios, endpoint.send/native.send)
		drainRatios = append(drainRatios, endpoint.drain/native.drain)
		fmt.Printf("round %d: send native %.0f msg/s, SQS %.0f msg/s (%.2f); drain native %.0f msg/s, SQS %.0f msg/s (%.2f)\n",
			r+1, native.send, endpoint.send, endpoint.send/native.send, native.drain, endpoint.drain, endpoint.drain/native.drain)
		fmt.Printf("round %d: CPU per message: send native %v, SQS %v; drain native %v, SQS %v\n",
			r+1, native.sendCPU.Round(100*time.Nanosecond), endpoint.sendCPU.Round(100*time.Nanosecond),
			native.drainCPU.Round(100*time.Nanosecond), endpoint.drainCPU.Round(100*time.Nanosecond))
	}
	fmt.Printf("SQS endpoint / native client, median over %d rounds: send %.2f, receive+delete %.2f\n",
		c.rounds, median(sendRatios), median(drainRatios))
}

// rates are one side's results in messages per second, and the process's
// CPU time per message of each phase (the nodes, the client or SDK and,
// for the SQS side, the endpoint all run in this process).
type rates struct {
	send, drain       float64
	sendCPU, drainCPU time.Duration
}

// round runs both sides on a fresh cluster.
func round(c config, r int) (native, endpoint rates, err error) {
	dir, err := os.MkdirTemp("", "sqs-bench-")
	if err != nil {
		return native, endpoint, err
	}
	defer os.RemoveAll(dir)
	cl, err := interop.StartCluster(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return native, endpoint, err
	}
	defer cl.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	body := make([]byte, c.size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	sides := []func() error{
		func() (err error) { native, err = runNative(ctx, c, cl, fmt.Sprintf("native-%d", r), body); return err },
		func() (err error) {
			profile := ""
			if r == c.rounds-1 {
				profile = c.profile
			}
			endpoint, err = runSQS(ctx, c, cl, fmt.Sprintf("sqs-%d", r), string(body), profile)
			return err
		},
	}
	if r%2 == 1 {
		slices.Reverse(sides)
	}
	for _, side := range sides {
		if err := side(); err != nil {
			return native, endpoint, err
		}
	}
	return native, endpoint, nil
}

// runNative publishes and drains with cairn's Go client.
func runNative(ctx context.Context, c config, cl *interop.Cluster, queue string, body []byte) (rates, error) {
	cc, err := client.Dial(ctx, client.Options{Secret: interop.ClientSecret}, cl.Runtimes[0].ClientAddr())
	if err != nil {
		return rates{}, err
	}
	defer cc.Close()
	if err := cc.CreateQueue(ctx, queue, client.PolicyMajority); err != nil {
		return rates{}, err
	}
	start, cpu := time.Now(), cpuTime()
	slots := make(chan struct{}, c.inFlight)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range c.messages {
		slots <- struct{}{}
		p := cc.PublishAsync(ctx, queue, body)
		wg.Go(func() {
			if _, err := p.Wait(); err != nil {
				failed.Add(1)
			}
			<-slots
		})
	}
	wg.Wait()
	send, sendCPU := time.Since(start), cpuTime()-cpu
	if n := failed.Load(); n > 0 {
		return rates{}, fmt.Errorf("native: %d publishes failed", n)
	}
	start, cpu = time.Now(), cpuTime()
	var handled atomic.Int64
	done := make(chan struct{})
	_, err = cc.Subscribe(ctx, queue, func(ctx context.Context, d *client.Delivery) {
		if d.Ack(ctx) == nil && handled.Add(1) == int64(c.messages) {
			close(done)
		}
	})
	if err != nil {
		return rates{}, err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return rates{}, fmt.Errorf("native: drained %d of %d: %w", handled.Load(), c.messages, ctx.Err())
	}
	// Every ack answered: the settles are durable, as SQS deletes are
	// when they answer.
	if err := cc.Flush(ctx); err != nil {
		return rates{}, err
	}
	drain, drainCPU := time.Since(start), cpuTime()-cpu
	return rates{send: float64(c.messages) / send.Seconds(), drain: float64(c.messages) / drain.Seconds(),
		sendCPU: sendCPU / time.Duration(c.messages), drainCPU: drainCPU / time.Duration(c.messages)}, nil
}

// runSQS sends and drains through node 1's SQS endpoint with the AWS SDK.
func runSQS(ctx context.Context, c config, cl *interop.Cluster, queue, body, profile string) (rates, error) {
	api := sqs.New(sqs.Options{Region: interop.Region, BaseEndpoint: aws.String("http://" + cl.Endpoints[0]),
		Credentials: credentials.NewStaticCredentialsProvider(interop.AppKeyID, interop.AppSecret, "")})
	created, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue)})
	if err != nil {
		return rates{}, err
	}
	url := created.QueueUrl
	start, cpu := time.Now(), cpuTime()
	if err := sendAll(ctx, api, url, body, c.messages, c.senders); err != nil {
		return rates{}, err
	}
	send, sendCPU := time.Since(start), cpuTime()-cpu
	stop, err := startProfile(profile)
	if err != nil {
		return rates{}, err
	}
	start, cpu = time.Now(), cpuTime()
	drained, err := drainAll(ctx, api, url, c.messages, c.receivers)
	drainCPU := cpuTime() - cpu
	stop()
	if err != nil {
		return rates{}, err
	}
	return rates{send: float64(c.messages) / send.Seconds(), drain: float64(c.messages) / drained.Sub(start).Seconds(),
		sendCPU: sendCPU / time.Duration(c.messages), drainCPU: drainCPU / time.Duration(c.messages)}, nil
}

// sendAll sends n messages in batches of ten from several goroutines.
func sendAll(ctx context.Context, api *sqs.Client, url *string, body string, n, senders int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for range senders {
		wg.Go(func() {
			for next.Add(10) <= int64(n) {
				var entries []types.SendMessageBatchRequestEntry
				for i := range 10 {
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)})
				}
				out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries})
				if err == nil && len(out.Failed) > 0 {
					err = fmt.Errorf("SQS: %d batch entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// drainAll receives and deletes until n messages are deleted.
func drainAll(ctx context.Context, api *sqs.Client, url *string, n, receivers int) (time.Time, error) {
	// The drain ends with the delete that settles the last message. The
	// other receivers are then in long polls of an empty queue, which
	// the drained context cuts short instead of letting them run out
	// their wait: that idle second is no part of the drain.
	drainCtx, drained := context.WithCancel(ctx)
	defer drained()
	var deleted atomic.Int64
	var end atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, receivers)
	for range receivers {
		wg.Go(func() {
			for deleted.Load() < int64(n) && drainCtx.Err() == nil {
				out, err := api.ReceiveMessage(drainCtx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if drainCtx.Err() != nil && ctx.Err() == nil {
					return // the last message was deleted meanwhile
				}
				if err != nil {
					errs <- err
					return
				}
				if len(out.Messages) == 0 {
					continue
				}
				var entries []types.DeleteMessageBatchRequestEntry
				for i, m := range out.Messages {
					entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
				}
				res, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: entries})
				if err != nil {
					errs <- err
					return
				}
				if deleted.Add(int64(len(res.Successful))) >= int64(n) {
					end.CompareAndSwap(0, time.Now().UnixNano())
					drained()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, end.Load()), ctx.Err()
}

// startProfile starts recording this process's CPU profile into path,
// unless path is empty; the returned function ends it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cairnmq/cairn/client"
)

// Connect to a cluster through any of its nodes. Here, the development
// cluster that `cairn-node dev` starts, which uses a well-known secret.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")},
		"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, n := range c.Nodes() {
		fmt.Printf("n%d at %s\n", n.ID, n.Addr)
	}
}

// Publish a message and tell the three possible outcomes apart.
func ExampleClient_Publish() {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateQueue(ctx, "orders", client.PolicyMajority); err != nil {
		var se *client.StatusError
		if !errors.As(err, &se) || se.Status != client.StatusQueueExists {
			log.Fatal(err)
		}
	}
	id, err := c.Publish(ctx, "orders", []byte(`{"order": 42}`))
	var se *client.StatusError
	switch {
	case err == nil:
		fmt.Println("confirmed:", id)
	case errors.Is(err, client.ErrUnknownOutcome):
		fmt.Println("may or may not be queued:", id) // consumers should expect it at most once
	case errors.As(err, &se):
		fmt.Println("certainly not queued:", se.Status)
	default:
		log.Fatal(err)
	}
}

// Consume a queue, acking each message once it is handled.
func ExampleClient_Subscribe() {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Subscribe(ctx, "orders", func(ctx context.Context, d *client.Delivery) {
		fmt.Printf("%s: %s\n", d.ID, d.Payload)
		if err := d.Ack(ctx); err != nil {
			log.Printf("ack %s: %v (it will be delivered again)", d.ID, err)
		}
	}, client.WithWindow(16), client.WithLease(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	<-ctx.Done() // deliveries arrive on the subscription's own goroutine
}

// Work on a message for longer than the subscription's lease, keeping it
// leased while the work goes on.
func ExampleDelivery_Extend() {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Subscribe(ctx, "renders", func(ctx context.Context, d *client.Delivery) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(45 * time.Second) // a long job
		}()
		keep := time.NewTicker(10 * time.Second)
		defer keep.Stop()
		for {
			select {
			case <-done:
				if err := d.AckSync(ctx); err != nil {
					log.Printf("ack %s: %v", d.ID, err)
				}
				return
			case <-keep.C:
				if err := d.Extend(ctx, 30*time.Second); err != nil {
					log.Printf("lease of %s lost: %v (it will be delivered again)", d.ID, err)
					return
				}
			}
		}
	}, client.WithLease(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
}

// Take up to ten messages in one go, waiting at most two seconds for
// them, and settle each.
func ExampleClient_Fetch() {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ds, err := c.Fetch(ctx, "orders", 10, 2*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range ds {
		fmt.Printf("%s: %s\n", d.ID, d.Payload)
		d.Ack(ctx)
	}
}

// Handle up to eight deliveries at once, and stop after a minute, once
// the calls in progress have returned.
func ExampleWithConcurrency() {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, "orders", func(ctx context.Context, d *client.Delivery) {
		time.Sleep(100 * time.Millisecond) // slow work that may overlap with other deliveries'
		d.Ack(ctx)
	}, client.WithConcurrency(8))
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Minute)
	sub.Stop()
}

// Publish many messages with all of them in flight, and tell which were
// confirmed.
func ExampleClient_PublishBatch() {
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{Secret: []byte("cairn-dev-cluster-secret")}, "127.0.0.1:7001")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	var payloads [][]byte
	for i := range 1000 {
		payloads = append(payloads, fmt.Appendf(nil, `{"order": %d}`, i))
	}
	results, err := c.PublishBatch(ctx, "orders", payloads)
	if err == nil {
		fmt.Println("all confirmed")
		return
	}
	for i, r := range results {
		switch {
		case r.Err == nil:
		case errors.Is(r.Err, client.ErrUnknownOutcome):
			fmt.Printf("%d (%s) may or may not be queued\n", i, r.ID)
		default:
			fmt.Printf("%d (%s) certainly not queued: %v\n", i, r.ID, r.Err)
		}
	}
}

package live

import (
	"sync"
	"time"

	"github.com/cairnmq/cairn/node"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncJob is one durability request from the node.
type syncJob struct {
	f   vfs.File
	tok node.SyncToken
}

// syncer runs fsyncs on a fixed number of worker goroutines and posts
// each outcome back to the node. Submitting never blocks: the queue is a
// slice, bounded in practice by the node, which asks for at most one sync
// per log at a time and lets later appends ride the next one.
type syncer struct {
	mu    sync.Mutex
	queue []syncJob
	busy  int
	// wake holds one token when there may be work; stopped is closed to
	// end the workers.
	wake    chan struct{}
	stopped chan struct{}
	once    sync.Once

	m    *metrics
	post func(func())
	// done delivers an outcome to the node; it runs on the node's
	// goroutine, by way of post.
	done func(node.SyncToken, error)
}

func newSyncer(m *metrics, post func(func()), done func(node.SyncToken, error)) *syncer {
	return &syncer{wake: make(chan struct{}, 1), stopped: make(chan struct{}), m: m, post: post, done: done}
}

// submit queues f for syncing. It runs on the node's goroutine.
func (s *syncer) submit(f vfs.File, tok node.SyncToken) {
	s.mu.Lock()
	s.queue = append(s.queue, syncJob{f: f, tok: tok})
	s.mu.Unlock()
	s.signal()
}

func (s *syncer) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// work is one worker's loop; it returns once the syncer stops. A sync in
// progress then still finishes, but its outcome reaches no one.
func (s *syncer) work() {
	for {
		job, ok := s.take()
		if !ok {
			return
		}
		start := time.Now()
		err := job.f.Sync()
		s.m.syncSeconds.Observe(time.Since(start).Seconds())
		s.m.syncs.Inc()
		if err != nil {
			s.m.syncErrors.Inc()
		}
		s.post(func() { s.done(job.tok, err) })
		s.mu.Lock()
		s.busy--
		s.mu.Unlock()
	}
}

// take waits for a job, or reports false once the syncer stops.
func (s *syncer) take() (syncJob, bool) {
	for {
		select {
		case <-s.stopped:
			return syncJob{}, false
		default:
		}
		s.mu.Lock()
		if n := len(s.queue); n > 0 {
			job := s.queue[0]
			s.queue[0] = syncJob{}
			s.queue = s.queue[1:]
			s.busy++
			more := n > 1
			s.mu.Unlock()
			if more {
				s.signal() // let another idle worker take the rest
			}
			return job, true
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.stopped:
			return syncJob{}, false
		}
	}
}

// idle reports whether no sync is queued or running.
func (s *syncer) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) == 0 && s.busy == 0
}

// stop ends the workers once their current sync returns.
func (s *syncer) stop() { s.once.Do(func() { close(s.stopped) }) }

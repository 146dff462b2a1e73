package relay

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Publishing paths (the "path" label of the metrics).
const (
	pathStream     = "stream"
	pathDispatcher = "dispatcher"
	pathPoll       = "poll"
	pathSnapshot   = "snapshot"
)

// pollLoop runs pollStep until ctx ends or a step fails (a Kafka error
// leaves the cursor where it was: the window is published again by the next
// term). It sleeps idle when a step published nothing and a tenth of it
// when it published less than a batch.
func (r *Relay) pollLoop(ctx context.Context, path string, idle time.Duration) error {
	if path == pathPoll {
		r.markReady()
	}
	for {
		n, err := r.pollStep(ctx, path)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		// Empty: sleep the poll interval. Partial: rows are trickling in;
		// come back sooner so they do not wait a whole interval.
		wait := time.Duration(0)
		switch {
		case n == 0:
			wait = idle
		case n < r.cfg.Relay.BatchSize:
			wait = idle / 10
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
	}
}

// pollStep runs one step: in poll mode a window of the log; for the
// dispatcher, a cursor move behind the stream or, while the stream is
// down, a window (see horizon).
func (r *Relay) pollStep(ctx context.Context, path string) (int, error) {
	if path == pathDispatcher {
		return r.dispatchStep(ctx)
	}
	return r.publishWindow(ctx, path)
}

// acks collects the outcome of produced records: wait returns once every
// one was acknowledged or failed, with the first error.
type acks struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
}

func (a *acks) fail(err error) {
	a.mu.Lock()
	if a.first == nil {
		a.first = err
	}
	a.mu.Unlock()
}

func (a *acks) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

func (a *acks) wait() error {
	a.wg.Wait()
	return a.err()
}

// produceRows produces rows in order without waiting for their
// acknowledgements; a records each outcome.
func (r *Relay) produceRows(ctx context.Context, rows []*Row, path string, a *acks) {
	a.wg.Add(len(rows))
	var snk *sink
	for _, row := range rows {
		if snk == nil || row.Topic != snk.topic {
			snk = r.m.sink(row.Topic, path)
		}
		created, m := row.CreatedAt, snk
		rec, end := r.startPublish(ctx, row, path)
		r.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			defer a.wg.Done()
			end(rec, err)
			if err != nil {
				m.errors.Inc()
				a.fail(err)
				return
			}
			m.published.Inc()
			if !created.IsZero() {
				m.latency.Observe(r.cfg.Now().Sub(created).Seconds())
			}
		})
	}
}

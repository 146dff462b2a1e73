package relay

import (
	"context"
	"errors"
	"fmt"
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

// produceAll produces rows in order and waits for every acknowledgement;
// it returns the first error.
func (r *Relay) produceAll(ctx context.Context, rows []*Row, path string) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	wg.Add(len(rows))
	for _, row := range rows {
		created := row.CreatedAt
		rec, end := r.startPublish(ctx, row, path)
		r.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
			defer wg.Done()
			end(rec, err)
			if err != nil {
				r.m.errors.WithLabelValues(rec.Topic).Inc()
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			r.m.published.WithLabelValues(rec.Topic, path).Inc()
			if !created.IsZero() {
				r.m.latency.WithLabelValues(path).Observe(r.cfg.Now().Sub(created).Seconds())
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) && ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: produce: %w", path, firstErr)
	}
	return nil
}

package relay

import (
	"context"
	"math"
	"time"
)

// PublishPending publishes every outbox row unsent at the time of the call,
// in poll mode's batches (claim, produce, wait for the acknowledgements,
// delete or mark per relay.on_published, commit), and returns how many it
// published. It takes no relay lock: it is for tools and tests that need
// the outbox drained synchronously while no relay runs, not a substitute
// for Run.
func (r *Relay) PublishPending(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := r.pollOnce(ctx, pathPoll, 0, math.MaxInt64, time.Time{})
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

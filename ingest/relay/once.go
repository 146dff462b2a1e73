package relay

import (
	"context"
)

// PublishPending publishes every outbox row the slot's cursor has not
// passed and that is committed at the time of the call (one window of the
// log, in poll mode's pages), moves the cursor past them, and returns how
// many it published. It takes no relay lock: it is for tools and tests that need
// the outbox drained synchronously while no relay runs, not a substitute
// for Run.
func (r *Relay) PublishPending(ctx context.Context) (int, error) {
	return r.publishWindow(ctx, pathPoll)
}

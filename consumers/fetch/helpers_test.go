package fetch

import (
	"context"

	"github.com/gatehouse/gatehouse/consumers/event"
)

// noLedger remembers nothing: a Fetcher never reads its batch's ledger.
type noLedger struct{}

func (noLedger) ForwardedTo(context.Context, string, string) (map[string]bool, error) {
	return nil, nil
}
func (noLedger) RecordForward(context.Context, string, string, string, event.Sent) error {
	return nil
}

// batch is a batch of one call: a new memo, so nothing is coalesced with
// another call.
func batch() *event.Batch { return event.NewBatch(noLedger{}) }

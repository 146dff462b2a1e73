package consumers

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/redact"
)

// The store is the runner's event.Ledger: table forward_deliveries.

// ForwardedTo lists the destinations that already took the event.
func (s store) ForwardedTo(ctx context.Context, provider, eventID string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT destination FROM forward_deliveries WHERE provider = $1 AND event_id = $2`, provider, eventID)
	if err != nil {
		return nil, fmt.Errorf("read forward deliveries: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("read forward deliveries: %w", err)
		}
		out[d] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read forward deliveries: %w", err)
	}
	return out, nil
}

// RecordForward records that destination answered 2xx for the event (or
// that a transform dropped it), with what a transform sent: its body, and
// the names of the headers it set with their values masked
// (redact.Headers), since a header may carry a credential. The body and
// headers are refused at write time when the event's payload is erased
// (its inbox row holds the erasure marker): the row still records the
// delivery, so no retry sends it again, but keeps neither. The statement
// reads the inbox row FOR SHARE, so an erasure committing meanwhile is
// waited for and seen (its own FOR UPDATE then waits for this statement,
// and its consumers_erase_events clears what was recorded): whatever the
// erasure selected, no recorded body outlives it.
func (s store) RecordForward(ctx context.Context, provider, eventID, destination string, sent event.Sent) error {
	var body, headers []byte
	if sent.Transformed && !sent.Dropped {
		body = sent.Body
		if len(sent.Headers) > 0 {
			var err error
			if headers, err = json.Marshal(redact.Headers(sent.Headers)); err != nil {
				return fmt.Errorf("record forward delivery: %w", err)
			}
		}
	}
	_, err := s.pool.Exec(ctx, recordForwardSQL, provider, eventID, destination, body, headers, sent.Dropped)
	if err != nil {
		return fmt.Errorf("record forward delivery: %w", err)
	}
	return nil
}

// recordForwardSQL inserts a forward_deliveries row; its body ($4) and
// headers ($5) only when the event's inbox row is not erased (no row: as
// sent).
const recordForwardSQL = `WITH ev AS (
  SELECT coalesce(bool_or(i.payload @> '{"erased": true}'), false) AS erased
  FROM (SELECT payload FROM inbox WHERE provider = $1 AND event_id = $2 FOR SHARE) i
)
INSERT INTO forward_deliveries (provider, event_id, destination, body, headers, dropped)
SELECT $1, $2, $3, CASE WHEN ev.erased THEN NULL ELSE $4::bytea END, CASE WHEN ev.erased THEN NULL ELSE $5::jsonb END, $6
FROM ev ON CONFLICT DO NOTHING`

package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// forwardLedger remembers which destinations answered 2xx for an event
// that goes to several, or whose delivery a transform shaped (table
// forward_deliveries), so a retry delivers only to the ones that failed
// and the console shows what a transform sent. The runner hands its store
// to the handlers through the context (withForwardLedger); without one
// (a handler called directly) every retry delivers to every destination.
type forwardLedger interface {
	forwardedTo(ctx context.Context, provider, eventID string) (map[string]bool, error)
	recordForward(ctx context.Context, provider, eventID, destination string, sent Sent) error
}

type ledgerKey struct{}

func withForwardLedger(ctx context.Context, l forwardLedger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

func ledgerFrom(ctx context.Context) forwardLedger {
	l, _ := ctx.Value(ledgerKey{}).(forwardLedger)
	return l
}

// forwardedTo lists the destinations that already took the event.
func (s store) forwardedTo(ctx context.Context, provider, eventID string) (map[string]bool, error) {
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

// recordForward records that destination answered 2xx for the event
// (or that a transform dropped it), with what a transform sent.
func (s store) recordForward(ctx context.Context, provider, eventID, destination string, sent Sent) error {
	var body []byte
	var headers []byte
	if sent.Transformed && !sent.Dropped {
		body = sent.Body
		if len(sent.Headers) > 0 {
			h := make(map[string]string, len(sent.Headers))
			for k := range sent.Headers {
				h[k] = sent.Headers.Get(k)
			}
			var err error
			if headers, err = json.Marshal(h); err != nil {
				return fmt.Errorf("record forward delivery: %w", err)
			}
		}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO forward_deliveries (provider, event_id, destination, body, headers, dropped)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, provider, eventID, destination, body, headers, sent.Dropped)
	if err != nil {
		return fmt.Errorf("record forward delivery: %w", err)
	}
	return nil
}

// Sent is what a Forwarder sent for one event: the body and the extra
// headers as a transform shaped them (Transformed), or nothing when the
// transform dropped the event (Dropped).
type Sent struct {
	Body        []byte
	Headers     http.Header
	Transformed bool
	Dropped     bool
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The keys the consumers park for forward destinations ordered per object
// (docs/CONSUMERS.md "Ordered delivery per object"): tables parked_keys
// and parked_events, the consumers'. The API lists them and releases a
// held one, as it changes a failure issue's status.

// ParkedKey is one parked key: a destination's object whose events wait
// behind a failed head event.
type ParkedKey struct {
	Destination string    `json:"destination"`
	Provider    string    `json:"provider"`
	Key         string    `json:"key"`
	State       string    `json:"state"` // waiting, ready or held
	HeadEventID string    `json:"head_event_id"`
	HeadError   string    `json:"head_error"`
	Events      int       `json:"events"` // parked behind the head
	ParkedAt    time.Time `json:"parked_at"`
}

// ErrParkedNotHeld answers a release of a key that is parked but not held.
var ErrParkedNotHeld = errors.New("api: the parked key is not held")

// maxParkedList bounds GET /parked.
const maxParkedList = 1000

const parkedColumns = `k.destination, k.provider, k.kafka_key, k.state, k.head_event_id, k.head_error,
  (SELECT count(*) FROM parked_events e WHERE e.destination = k.destination AND e.provider = k.provider AND e.kafka_key = k.kafka_key),
  k.parked_at`

func scanParked(row pgx.Row) (*ParkedKey, error) {
	var p ParkedKey
	err := row.Scan(&p.Destination, &p.Provider, &p.Key, &p.State, &p.HeadEventID, &p.HeadError, &p.Events, &p.ParkedAt)
	return &p, err
}

// ListParked lists the parked keys, the longest parked first, at most
// maxParkedList.
func (ib Inbox) ListParked(ctx context.Context) ([]*ParkedKey, error) {
	rows, err := ib.Pool.Query(ctx, `SELECT `+parkedColumns+` FROM parked_keys k ORDER BY k.parked_at, k.kafka_key LIMIT $1`, maxParkedList)
	if err != nil {
		return nil, fmt.Errorf("list parked keys: %w", err)
	}
	defer rows.Close()
	out := []*ParkedKey{}
	for rows.Next() {
		p, err := scanParked(rows)
		if err != nil {
			return nil, fmt.Errorf("list parked keys: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list parked keys: %w", err)
	}
	return out, nil
}

// ReleaseParked releases a held key: the consumers deliver its parked
// events in order. errNotFound: no such key; ErrParkedNotHeld: the key is
// not held (its head has not been dead-lettered).
func (ib Inbox) ReleaseParked(ctx context.Context, destination, provider, key string) (*ParkedKey, error) {
	p, err := scanParked(ib.Pool.QueryRow(ctx, `UPDATE parked_keys k SET state = 'ready', attempts = 0, next_at = now()
WHERE k.destination = $1 AND k.provider = $2 AND k.kafka_key = $3 AND k.state = 'held' RETURNING `+parkedColumns, destination, provider, key))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("release parked key: %w", err)
	}
	var state string
	err = ib.Pool.QueryRow(ctx, `SELECT state FROM parked_keys WHERE destination = $1 AND provider = $2 AND kafka_key = $3`,
		destination, provider, key).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("release parked key: %w", err)
	}
	return nil, ErrParkedNotHeld
}

// listParked answers the parked keys ({"parked": [...]}).
func (s *Server) listParked(w http.ResponseWriter, r *http.Request) {
	keys, err := s.inbox.ListParked(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"parked": keys})
}

// releaseParked releases a held key ({"destination", "provider", "key"}):
// its parked events go out in order. It answers the key, now ready.
func (s *Server) releaseParked(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Destination string `json:"destination"`
		Provider    string `json:"provider"`
		Key         string `json:"key"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 8192))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Destination == "" || body.Provider == "" || body.Key == "" {
		s.fail(w, r, badRequest(`the body must be {"destination": …, "provider": …, "key": …}`))
		return
	}
	if strings.ContainsRune(body.Destination+body.Provider+body.Key, 0) {
		s.fail(w, r, errNotFound) // no parked key holds a NUL: PostgreSQL's text cannot
		return
	}
	p, err := s.inbox.ReleaseParked(r.Context(), body.Destination, body.Provider, body.Key)
	if errors.Is(err, ErrParkedNotHeld) {
		err = errParkedNotHeld
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := CallerFrom(r.Context())
	s.cfg.Logger.Info("parked key released via api", "destination", p.Destination, "provider", p.Provider, "key", p.Key,
		"operator_issuer", c.User.Issuer, "operator_subject", c.User.Subject)
	writeJSON(w, http.StatusOK, p)
}

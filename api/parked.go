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
	// IssueID is the failure issue that holds the head's failure at this
	// destination (stage forward:<destination>); nil: none (a head that
	// succeeded, an open circuit, a missing inbox row).
	IssueID *int64 `json:"issue_id,omitempty"`
}

// ParkedCause is the parked keys of one destination and provider grouped
// by their cause: the head's error (its class) and the failure issue
// that holds it.
type ParkedCause struct {
	Destination string    `json:"destination"`
	Provider    string    `json:"provider"`
	Cause       string    `json:"cause"` // the heads' error; "" for keys going out
	IssueID     *int64    `json:"issue_id,omitempty"`
	Keys        int       `json:"keys"`
	Events      int       `json:"events"`
	OldestAt    time.Time `json:"oldest_parked_at"`
}

// ErrParkedNotHeld answers a release of a key that is parked but not held.
var ErrParkedNotHeld = errors.New("api: the parked key is not held")

// maxParkedList bounds GET /parked.
const maxParkedList = 1000

// parkedIssueSQL is the failure issue of parked key k's head at k's
// destination (the latest, should its failures have moved to another).
const parkedIssueSQL = `(SELECT fe.issue_id FROM failure_issue_events fe JOIN failure_issues fi ON fi.id = fe.issue_id
  WHERE fe.provider = k.provider AND fe.event_id = k.head_event_id AND fi.stage = 'forward:' || k.destination
  ORDER BY fe.last_seen DESC LIMIT 1)`

const parkedColumns = `k.destination, k.provider, k.kafka_key, k.state, k.head_event_id, k.head_error,
  (SELECT count(*) FROM parked_events e WHERE e.destination = k.destination AND e.provider = k.provider AND e.kafka_key = k.kafka_key),
  k.parked_at, ` + parkedIssueSQL

func scanParked(row pgx.Row) (*ParkedKey, error) {
	var p ParkedKey
	err := row.Scan(&p.Destination, &p.Provider, &p.Key, &p.State, &p.HeadEventID, &p.HeadError, &p.Events, &p.ParkedAt, &p.IssueID)
	return &p, err
}

// ListParkedCauses groups the parked keys by destination, provider and
// cause (ParkedCause), the most keys first, at most maxParkedList groups.
func (ib Inbox) ListParkedCauses(ctx context.Context) ([]*ParkedCause, error) {
	rows, err := ib.Pool.Query(ctx, `WITH p AS (
  SELECT k.destination, k.provider, k.head_error, k.parked_at, `+parkedIssueSQL+` AS issue_id,
    (SELECT count(*) FROM parked_events e WHERE e.destination = k.destination AND e.provider = k.provider AND e.kafka_key = k.kafka_key) AS events
  FROM parked_keys k)
SELECT destination, provider, head_error, issue_id, count(*), sum(events), min(parked_at) FROM p
GROUP BY destination, provider, head_error, issue_id ORDER BY count(*) DESC, min(parked_at), destination, head_error LIMIT $1`, maxParkedList)
	if err != nil {
		return nil, fmt.Errorf("parked keys by cause: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ParkedCause, error) {
		var c ParkedCause
		err := r.Scan(&c.Destination, &c.Provider, &c.Cause, &c.IssueID, &c.Keys, &c.Events, &c.OldestAt)
		return &c, err
	})
	if err != nil {
		return nil, fmt.Errorf("parked keys by cause: %w", err)
	}
	if out == nil {
		out = []*ParkedCause{}
	}
	return out, nil
}

// issueParkedKeys counts the parked keys whose head's failure issue is id.
func (ib Inbox) issueParkedKeys(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := ib.Pool.QueryRow(ctx, `SELECT count(*) FROM parked_keys k WHERE `+parkedIssueSQL+` = $1`, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count parked keys of issue: %w", err)
	}
	return n, nil
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

// listParked answers the parked keys ({"parked": [...]}), each with the
// failure issue of its head (a client groups them by it, as the console's
// Parked page does with ListParkedCauses).
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

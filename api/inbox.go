package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/schemas"
)

// The inbox read model: the one set of inbox queries, filters and paging
// that /api/v1/events and the operator's console (api/console) both
// answer, so a filter added to one is in the other.

// Event is an inbox row as the API and the console show it.
type Event struct {
	Provider        string          `json:"provider"`
	EventID         string          `json:"event_id"`
	Type            string          `json:"type"`
	ReceivedAt      time.Time       `json:"received_at"`
	CreatedAt       *time.Time      `json:"created_at,omitempty"`
	Verified        bool            `json:"verified"`
	SecretID        string          `json:"secret_id"`
	ProcessingState string          `json:"processing_state"`
	Attempts        int             `json:"attempts"`
	LastError       *string         `json:"last_error,omitempty"`
	LastErrorClass  *string         `json:"last_error_class,omitempty"`
	ProcessedAt     *time.Time      `json:"processed_at,omitempty"`
	NextAttemptAt   *time.Time      `json:"next_attempt_at,omitempty"`
	Replays         int             `json:"replays"`
	UpdatedAt       time.Time       `json:"updated_at"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	// TraceID is the trace of the delivery that recorded the event (tracing
	// on; docs/TRACING.md), "" when it was recorded untraced. The console
	// shows it; it is not (yet) part of the /api/v1 contract.
	TraceID string `json:"-"`
}

// Final reports whether the event's state is final (schemas.Final).
func (e *Event) Final() bool { return schemas.Final(e.ProcessingState) }

const eventColumns = `provider, event_id, event_type, received_at, event_created_at, verified, secret_id,
  processing_state, attempts, last_error, last_error_class, processed_at, next_attempt_at, replays, updated_at,
  coalesce(substr(traceparent, 4, 32), '')`

func scanEvent(row pgx.Row, withPayload bool) (*Event, error) {
	var e Event
	var attempts, replays int32
	dst := []any{&e.Provider, &e.EventID, &e.Type, &e.ReceivedAt, &e.CreatedAt, &e.Verified, &e.SecretID,
		&e.ProcessingState, &attempts, &e.LastError, &e.LastErrorClass, &e.ProcessedAt, &e.NextAttemptAt, &replays, &e.UpdatedAt, &e.TraceID}
	if withPayload {
		dst = append(dst, &e.Payload)
	}
	if err := row.Scan(dst...); err != nil {
		return nil, err
	}
	e.Attempts, e.Replays = int(attempts), int(replays)
	e.ReceivedAt, e.UpdatedAt = e.ReceivedAt.UTC(), e.UpdatedAt.UTC()
	return &e, nil
}

// EventFilter selects inbox rows; an empty field does not filter.
type EventFilter struct {
	Provider, Type string // exact match, 1 to 128 characters of [A-Za-z0-9_.:/-]
	State          string // one of schemas.States()
	EventID        string // exact match, at most MaxEventIDFilter bytes
	Since, Until   *time.Time
	// Match and Paths search the payload (search.go).
	Match string
	Paths []PathValue
}

// MaxEventIDFilter bounds the event_id filter.
const MaxEventIDFilter = 256

var filterValue = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)

// FilterError names the filter field a query refused and why; each surface
// writes it with its own parameter name.
type FilterError struct {
	Field  string // provider, type, processing_state, event_id, since, until, cursor
	Reason string
}

func (e *FilterError) Error() string { return e.Field + ": " + e.Reason }

// Validate checks every set field (a *FilterError).
func (f EventFilter) Validate() error {
	for field, v := range map[string]string{"provider": f.Provider, "type": f.Type} {
		if v != "" && !filterValue.MatchString(v) {
			return &FilterError{field, "must be 1 to 128 characters of [A-Za-z0-9_.:/-]"}
		}
	}
	if f.State != "" && !slices.Contains(schemas.States(), f.State) {
		return &FilterError{"processing_state", "must be one of " + strings.Join(schemas.States(), ", ")}
	}
	if len(f.EventID) > MaxEventIDFilter {
		return &FilterError{"event_id", fmt.Sprintf("at most %d characters", MaxEventIDFilter)}
	}
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		return &FilterError{"until", "must be later than since"}
	}
	return f.validateSearch()
}

// ParseFilterTime reads a since/until value: RFC 3339, or (for a form's
// datetime-local field) 2006-01-02T15:04 in UTC.
func ParseFilterTime(field, v string) (*time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		if t, err = time.ParseInLocation("2006-01-02T15:04", v, time.UTC); err != nil {
			return nil, &FilterError{field, "want a time such as 2026-11-23T10:00 (UTC) or RFC 3339"}
		}
	}
	return &t, nil
}

// Inbox is the read model over a pool.
type Inbox struct {
	Pool *pgxpool.Pool
	// SearchIndexed reports whether a provider's payloads are indexed for
	// search (config's Provider.Search "indexed"); nil: none is.
	SearchIndexed func(provider string) bool
	// SearchSpan is the most received_at time one page of an indexed
	// search reads (ListEvents); 0: DefaultSearchSpan.
	SearchSpan time.Duration
}

// DeadEvents answers up to limit dead events grouped by provider, type
// and error class (oldest first within a group).
func (ib Inbox) DeadEvents(ctx context.Context, limit int) ([]*Event, error) {
	return ib.collect(ctx, `SELECT `+eventColumns+` FROM inbox WHERE processing_state = $1
ORDER BY provider, event_type, last_error_class, received_at LIMIT $2`, schemas.StateDead, limit)
}

func (ib Inbox) collect(ctx context.Context, sql string, args ...any) ([]*Event, error) {
	rows, err := ib.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query inbox: %w", err)
	}
	defer rows.Close()
	events := []*Event{}
	for rows.Next() {
		e, err := scanEvent(rows, false)
		if err != nil {
			return nil, fmt.Errorf("scan inbox row: %w", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	return events, nil
}

// GetEvent answers one inbox row with its stored (verified) payload, or
// ErrEventNotFound.
func (ib Inbox) GetEvent(ctx context.Context, provider, eventID string) (*Event, error) {
	row := ib.Pool.QueryRow(ctx, `SELECT `+eventColumns+`, payload FROM inbox WHERE provider = $1 AND event_id = $2`, provider, eventID)
	e, err := scanEvent(row, true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrEventNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read inbox row: %w", err)
	}
	return e, nil
}

// Replay is one recorded replay of an event: who asked, the state it
// left, when, and whether it was forced.
type Replay struct {
	By, PreviousState string
	At                time.Time
	Forced            bool
}

// Replays answers an event's recorded replays, oldest first.
func (ib Inbox) Replays(ctx context.Context, provider, eventID string) ([]Replay, error) {
	rows, err := ib.Pool.Query(ctx, `SELECT requested_by, previous_state, requested_at, forced FROM replays
WHERE provider = $1 AND event_id = $2 ORDER BY requested_at`, provider, eventID)
	if err != nil {
		return nil, fmt.Errorf("query replays: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Replay])
}

// Forward is what one forward destination took of an event: recorded
// when the event went to several destinations or through a transform.
// Body and Headers are what a transform sent (nil when the delivery was
// sent as built, or when the event was erased); Dropped is a transform
// that cancelled the delivery.
type Forward struct {
	Destination string
	DeliveredAt time.Time
	Body        []byte
	Headers     map[string]string
	Dropped     bool
}

// Forwards answers what each forward destination took of an event, by
// destination.
func (ib Inbox) Forwards(ctx context.Context, provider, eventID string) ([]Forward, error) {
	rows, err := ib.Pool.Query(ctx, `SELECT destination, delivered_at, body, headers, dropped FROM forward_deliveries
WHERE provider = $1 AND event_id = $2 ORDER BY destination`, provider, eventID)
	if err != nil {
		return nil, fmt.Errorf("query forward deliveries: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Forward])
}

// Change is one row of the effect log an event wrote.
type Change struct {
	ObjectID   string
	OldVersion *int64
	NewVersion int64
	AppliedAt  time.Time
}

// Changes answers the object changes an event applied, in order (none
// once its processed_events row has expired).
func (ib Inbox) Changes(ctx context.Context, provider, eventID string) ([]Change, error) {
	// An applied event changed the one object its processed_events row
	// names: the lookup walks that object's changes (an index), not the
	// provider's whole effect log.
	rows, err := ib.Pool.Query(ctx, `SELECT c.object_id, c.old_version, c.new_version, c.applied_at FROM provider_object_changes c
WHERE c.provider = $1 AND c.event_id = $2
  AND c.object_id = ANY (ARRAY(SELECT object_id FROM processed_events WHERE provider = $1 AND event_id = $2 AND object_id IS NOT NULL))
ORDER BY c.id`, provider, eventID)
	if err != nil {
		return nil, fmt.Errorf("query object changes: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Change])
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

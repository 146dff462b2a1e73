package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is an inbox row as the API shows it.
type Event struct {
	Provider        string          `json:"provider"`
	EventID         string          `json:"event_id"`
	Type            string          `json:"type"`
	ReceivedAt      time.Time       `json:"received_at"`
	CreatedAt       *time.Time      `json:"created_at,omitempty"`
	Verified        bool            `json:"verified"`
	ProcessingState string          `json:"processing_state"`
	Attempts        int             `json:"attempts"`
	LastError       *string         `json:"last_error,omitempty"`
	LastErrorClass  *string         `json:"last_error_class,omitempty"`
	ProcessedAt     *time.Time      `json:"processed_at,omitempty"`
	NextAttemptAt   *time.Time      `json:"next_attempt_at,omitempty"`
	Replays         int             `json:"replays"`
	UpdatedAt       time.Time       `json:"updated_at"`
	Payload         json.RawMessage `json:"payload,omitempty"`
}

const eventColumns = `provider, event_id, event_type, received_at, event_created_at, verified,
  processing_state, attempts, last_error, last_error_class, processed_at, next_attempt_at, replays, updated_at`

func scanEvent(row pgx.Row, withPayload bool) (*Event, error) {
	var e Event
	var attempts, replays int32
	dst := []any{&e.Provider, &e.EventID, &e.Type, &e.ReceivedAt, &e.CreatedAt, &e.Verified,
		&e.ProcessingState, &attempts, &e.LastError, &e.LastErrorClass, &e.ProcessedAt, &e.NextAttemptAt, &replays, &e.UpdatedAt}
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

var filterValue = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)

// ProcessingStates are the inbox's processing states, the enum of the
// processing_state filter.
var ProcessingStates = []string{"pending", "processing", "succeeded", "ignored_stale", "skipped", "retrying", "dead"}

var processingStates = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range ProcessingStates {
		m[s] = true
	}
	return m
}()

// filterParam returns query parameter k, "" when absent. A present value
// must match filterValue: an empty or malformed filter is a 400, never a
// silently empty (or unfiltered) list.
func filterParam(q url.Values, k string) (string, error) {
	if !q.Has(k) {
		return "", nil
	}
	v := q.Get(k)
	if !filterValue.MatchString(v) {
		return "", badRequest(k + " must be 1 to 128 characters of [A-Za-z0-9_.:/-]")
	}
	return v, nil
}

// DefaultPageSize and MaxPageSize bound list answers.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// eventCursor is the keyset position after the last row of a page.
type eventCursor struct {
	ReceivedAt time.Time `json:"r"`
	Provider   string    `json:"p"`
	EventID    string    `json:"e"`
}

func pageSize(r *http.Request) (int, error) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return DefaultPageSize, nil
	}
	v := q.Get("limit")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, badRequest("limit must be an integer between 1 and " + strconv.Itoa(MaxPageSize))
	}
	return n, nil
}

func decodeCursor(v string, dst any) error {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || json.Unmarshal(b, dst) != nil {
		return badRequest("cursor is malformed")
	}
	return nil
}

func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// listEvents answers inbox rows, newest first, filtered by provider, type
// and processing_state (each optional, exact match), a page at a time.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := pageSize(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	filters := map[string]string{}
	for _, k := range []string{"provider", "type", "processing_state"} {
		v, err := filterParam(q, k)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		filters[k] = v
	}
	if v := filters["processing_state"]; v != "" && !processingStates[v] {
		s.fail(w, r, badRequest("processing_state must be one of "+strings.Join(ProcessingStates, ", ")))
		return
	}
	var cur *eventCursor
	if v := q.Get("cursor"); v != "" {
		cur = &eventCursor{}
		if err := decodeCursor(v, cur); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	args := []any{nilIfEmpty(filters["provider"]), nilIfEmpty(filters["type"]), nilIfEmpty(filters["processing_state"]), limit + 1}
	sql := `SELECT ` + eventColumns + ` FROM inbox
WHERE ($1::text IS NULL OR provider = $1) AND ($2::text IS NULL OR event_type = $2)
  AND ($3::text IS NULL OR processing_state = $3)`
	if cur != nil {
		sql += ` AND (received_at, provider, event_id) < ($5, $6, $7)`
		args = append(args, cur.ReceivedAt, cur.Provider, cur.EventID)
	}
	sql += ` ORDER BY received_at DESC, provider DESC, event_id DESC LIMIT $4`
	rows, err := s.cfg.Pool.Query(r.Context(), sql, args...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer rows.Close()
	events := []*Event{}
	for rows.Next() {
		e, err := scanEvent(rows, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		s.fail(w, r, err)
		return
	}
	resp := map[string]any{}
	if len(events) > limit {
		events = events[:limit]
		last := events[limit-1]
		resp["next_cursor"] = encodeCursor(eventCursor{ReceivedAt: last.ReceivedAt, Provider: last.Provider, EventID: last.EventID})
	}
	resp["events"] = events
	writeJSON(w, http.StatusOK, resp)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// getEvent answers one inbox row with its stored (verified) payload.
func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	row := s.cfg.Pool.QueryRow(r.Context(), `SELECT `+eventColumns+`, payload FROM inbox WHERE provider = $1 AND event_id = $2`,
		pathParam(r, "provider"), pathParam(r, "event_id"))
	e, err := scanEvent(row, true)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

package console

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/api"
)

// ProviderStats is one provider's row of the overview, in the order an
// event travels.
type ProviderStats struct {
	Provider                  string
	ReceivedHour              int64
	Pending, Retrying, Dead   int64
	OldestOpen                *time.Time // oldest acknowledged event not yet final
	Succeeded, Stale, Skipped int64      // final in the last hour
}

// Overview is the overview page's data.
type Overview struct {
	Providers    []ProviderStats
	OutboxUnsent int64
	OutboxOldest *time.Time
	Slots        []Slot
	At           time.Time
}

// Slot is a replication slot the relay streams from.
type Slot struct {
	Name    string
	Active  bool
	LagByte int64
}

func (c *Console) loadOverview(r *http.Request) (*Overview, error) {
	ctx := r.Context()
	o := &Overview{At: c.cfg.Now()}
	rows, err := c.cfg.Pool.Query(ctx, `SELECT provider,
  count(*) FILTER (WHERE received_at > now() - interval '1 hour'),
  count(*) FILTER (WHERE processing_state IN ('pending', 'processing')),
  count(*) FILTER (WHERE processing_state = 'retrying'),
  count(*) FILTER (WHERE processing_state = 'dead'),
  min(received_at) FILTER (WHERE processing_state IN ('pending', 'processing', 'retrying')),
  count(*) FILTER (WHERE processing_state = 'succeeded' AND processed_at > now() - interval '1 hour'),
  count(*) FILTER (WHERE processing_state = 'ignored_stale' AND processed_at > now() - interval '1 hour'),
  count(*) FILTER (WHERE processing_state = 'skipped' AND processed_at > now() - interval '1 hour')
FROM inbox GROUP BY provider ORDER BY provider`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var p ProviderStats
		if err := rows.Scan(&p.Provider, &p.ReceivedHour, &p.Pending, &p.Retrying, &p.Dead, &p.OldestOpen,
			&p.Succeeded, &p.Stale, &p.Skipped); err != nil {
			rows.Close()
			return nil, err
		}
		o.Providers = append(o.Providers, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := c.cfg.Pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM outbox WHERE published_at IS NULL`).
		Scan(&o.OutboxUnsent, &o.OutboxOldest); err != nil {
		return nil, err
	}
	srows, err := c.cfg.Pool.Query(ctx, `SELECT slot_name, active, coalesce((pg_current_wal_lsn() - confirmed_flush_lsn)::bigint, 0)
FROM pg_replication_slots WHERE database = current_database() ORDER BY slot_name`)
	if err != nil {
		return nil, err
	}
	defer srows.Close()
	for srows.Next() {
		var s Slot
		if err := srows.Scan(&s.Name, &s.Active, &s.LagByte); err != nil {
			return nil, err
		}
		o.Slots = append(o.Slots, s)
	}
	return o, srows.Err()
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	o, err := c.loadOverview(r)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", o)
}

// overviewJSON is what the overview page polls to refresh in place.
func (c *Console) overviewJSON(w http.ResponseWriter, r *http.Request) {
	o, err := c.loadOverview(r)
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(o)
}

// EventRow is one line of the events list.
type EventRow struct {
	Provider, EventID, Type, State string
	Attempts                       int
	ReceivedAt                     time.Time
	LastErrorClass                 *string
}

// EventsPage is the events page's data.
type EventsPage struct {
	Filter  map[string]string
	States  []string
	Events  []EventRow
	Next    template.URL // the next page ("" when none): this path and an encoded query
	Problem string       // a filter the page refused, said plainly
}

// filterKeys are the events page's filters.
var filterKeys = []string{"provider", "type", "state", "event_id", "since", "until"}

func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pg := &EventsPage{Filter: map[string]string{}, States: api.ProcessingStates}
	for _, k := range filterKeys {
		pg.Filter[k] = strings.TrimSpace(q.Get(k))
	}
	var since, until *time.Time
	problem := func(msg string) {
		pg.Problem = msg
		c.render(w, r, http.StatusBadRequest, "events", "Events", pg)
	}
	for k, dst := range map[string]**time.Time{"since": &since, "until": &until} {
		if v := pg.Filter[k]; v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				if t, err = time.ParseInLocation("2006-01-02T15:04", v, time.UTC); err != nil {
					problem(k + ": want a time such as 2026-11-23T10:00 (UTC) or RFC 3339")
					return
				}
			}
			*dst = &t
		}
	}
	if s := pg.Filter["state"]; s != "" && !validState(s) {
		problem("state: must be one of " + strings.Join(api.ProcessingStates, ", "))
		return
	}
	for _, k := range []string{"provider", "type", "event_id"} {
		if len(pg.Filter[k]) > 256 {
			problem(k + ": at most 256 characters")
			return
		}
	}
	var after *cursor
	if v := q.Get("after"); v != "" {
		cur, err := parseCursor(v)
		if err != nil {
			problem("after: not a page position this console issued")
			return
		}
		after = cur
	}
	const limit = 50
	args := []any{nilIfEmpty(pg.Filter["provider"]), nilIfEmpty(pg.Filter["type"]), nilIfEmpty(pg.Filter["state"]),
		nilIfEmpty(pg.Filter["event_id"]), since, until, limit + 1}
	sql := `SELECT provider, event_id, event_type, processing_state, attempts, received_at, last_error_class FROM inbox
WHERE ($1::text IS NULL OR provider = $1) AND ($2::text IS NULL OR event_type = $2)
  AND ($3::text IS NULL OR processing_state = $3) AND ($4::text IS NULL OR event_id = $4)
  AND ($5::timestamptz IS NULL OR received_at >= $5) AND ($6::timestamptz IS NULL OR received_at < $6)`
	if after != nil {
		sql += ` AND (received_at, provider, event_id) < ($8, $9, $10)`
		args = append(args, after.At, after.Provider, after.EventID)
	}
	sql += ` ORDER BY received_at DESC, provider DESC, event_id DESC LIMIT $7`
	rows, err := c.cfg.Pool.Query(r.Context(), sql, args...)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[EventRow])
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	if len(events) > limit {
		events = events[:limit]
		last := events[limit-1]
		next := r.URL.Query()
		next.Set("after", cursor{At: last.ReceivedAt, Provider: last.Provider, EventID: last.EventID}.String())
		pg.Next = template.URL("/console/events?" + next.Encode()) // url.Values.Encode: safe in an href
	}
	pg.Events = events
	c.render(w, r, http.StatusOK, "events", "Events", pg)
}

func validState(s string) bool {
	for _, v := range api.ProcessingStates {
		if v == s {
			return true
		}
	}
	return false
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// EventDetail is the event page's data.
type EventDetail struct {
	EventRow
	Verified      bool
	SecretID      string
	Payload       string // indented JSON
	LastError     *string
	NextAttemptAt *time.Time
	ProcessedAt   *time.Time
	Replays       []Replay
	Changes       []Change
	Final         bool
}

// Replay is one recorded replay of the event: who asked, the state it
// left, when, and whether it was forced.
type Replay struct {
	By, PreviousState string
	At                time.Time
	Forced            bool
}

// Change is one row of the effect log the event wrote.
type Change struct {
	ObjectID   string
	OldVersion *int64
	NewVersion int64
	AppliedAt  time.Time
}

func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	provider, id := chi.URLParam(r, "provider"), chi.URLParam(r, "event_id")
	if r.URL.RawPath != "" { // ids with '/' or '?' arrive escaped
		provider, id = unescape(provider), unescape(id)
	}
	ctx := r.Context()
	d := &EventDetail{}
	var payload []byte
	err := c.cfg.Pool.QueryRow(ctx, `SELECT provider, event_id, event_type, processing_state, attempts, received_at, last_error_class,
  verified, secret_id, jsonb_pretty(payload), last_error, next_attempt_at, processed_at
FROM inbox WHERE provider = $1 AND event_id = $2`, provider, id).Scan(&d.Provider, &d.EventID, &d.Type, &d.State, &d.Attempts,
		&d.ReceivedAt, &d.LastErrorClass, &d.Verified, &d.SecretID, &payload, &d.LastError, &d.NextAttemptAt, &d.ProcessedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		c.fail(w, r, http.StatusNotFound, "no stored event "+id+" of provider "+provider)
		return
	}
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	d.Payload = string(payload)
	d.Final = d.State == "succeeded" || d.State == "ignored_stale" || d.State == "skipped"
	rows, err := c.cfg.Pool.Query(ctx, `SELECT requested_by, previous_state, requested_at, forced FROM replays
WHERE provider = $1 AND event_id = $2 ORDER BY requested_at`, provider, id)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	if d.Replays, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Replay]); err != nil {
		c.dbError(w, r, err)
		return
	}
	rows, err = c.cfg.Pool.Query(ctx, `SELECT object_id, old_version, new_version, applied_at FROM provider_object_changes
WHERE provider = $1 AND event_id = $2 ORDER BY id`, provider, id)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	if d.Changes, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Change]); err != nil {
		c.dbError(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "event", "Event "+id, d)
}

// DeadGroup is one group of dead events (provider, type, error class).
type DeadGroup struct {
	Provider, Type, Class string
	Count                 int64
	Events                []EventRow
}

func (c *Console) dead(w http.ResponseWriter, r *http.Request) {
	rows, err := c.cfg.Pool.Query(r.Context(), `SELECT provider, event_id, event_type, processing_state, attempts, received_at, last_error_class
FROM inbox WHERE processing_state = 'dead' ORDER BY provider, event_type, last_error_class, received_at LIMIT 2000`)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[EventRow])
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	var groups []*DeadGroup
	for _, e := range events {
		class := ""
		if e.LastErrorClass != nil {
			class = *e.LastErrorClass
		}
		if n := len(groups); n == 0 || groups[n-1].Provider != e.Provider || groups[n-1].Type != e.Type || groups[n-1].Class != class {
			groups = append(groups, &DeadGroup{Provider: e.Provider, Type: e.Type, Class: class})
		}
		g := groups[len(groups)-1]
		g.Count++
		g.Events = append(g.Events, e)
	}
	c.render(w, r, http.StatusOK, "dead", "Dead letters", groups)
}

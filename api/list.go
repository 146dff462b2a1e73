package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// How ListEvents stays fast on any history (docs/AUTH.md "The API"): every page
// is a keyset page newest first on an index of each inbox partition, and a
// filter no index serves is bounded.
//
//   - Served by an index: since and until (received_at, provider,
//     event_id), processing_state (processing_state, received_at), and
//     provider with event_id together (provider, event_id).
//   - Served by a search index: match and path (search.go) for a provider
//     whose search is indexed, with the provider named: a page reads the
//     matching rows of the window (default the last DefaultScanWindow), at
//     most Inbox.SearchSpan of it (default DefaultSearchSpan), newest
//     first: when the window is longer and the page is not full, the page
//     is Partial and Next continues with the next older span (as a scan
//     page that ran out of ScanBudget), so no page walks every partition's
//     index of a long history.
//   - Not served by an index (scan filters): type, provider alone, event_id
//     alone, match and path otherwise. Rows are then read newest first on the indexed filters and
//     these filters applied to them: without since or until the search is
//     bounded to the DefaultScanWindow before the first page (EventPage.Window
//     says so, and the cursor keeps it), and a page reads at most ScanBudget
//     rows: when they run out before the page is full, the page is Partial
//     and Next continues from the last row read.
const (
	// DefaultScanWindow is the time searched by a scan filter given
	// without since or until: the last 24 hours.
	DefaultScanWindow = 24 * time.Hour
	// ScanBudget is the most inbox rows one page with a scan filter reads.
	ScanBudget = 10_000
	// DefaultSearchSpan is the most received_at time one page of an
	// indexed search reads, unless Inbox.SearchSpan says otherwise: the
	// api section's default (api.search_span).
	DefaultSearchSpan = settings.DefaultSearchSpan
)

// EventCursor is the keyset position after the last row of a page (or the
// last row a partial page read).
type EventCursor struct {
	ReceivedAt time.Time `json:"r"`
	Provider   string    `json:"p"`
	EventID    string    `json:"e"`
	// WindowSince is the start of the default window the first page
	// applied (nil: none), so the following pages search the same one.
	WindowSince *time.Time `json:"w,omitempty"`
}

// String encodes c for a URL.
func (c EventCursor) String() string { return encodeCursor(c) }

// ParseEventCursor decodes a cursor String made (a *FilterError "cursor").
func ParseEventCursor(s string) (*EventCursor, error) {
	c := &EventCursor{}
	if decodeCursor(s, c) != nil || c.ReceivedAt.IsZero() {
		return nil, &FilterError{"cursor", "is malformed"}
	}
	return c, nil
}

// Window is the time range a page searched when the server bounded it:
// [Since, Until).
type Window struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
}

// EventPage is one page of ListEvents: Next is nil on the last page.
type EventPage struct {
	Events []*Event
	Next   *EventCursor
	// Window is the default window applied to a scan filter given without
	// since or until (nil: none applied).
	Window *Window
	// Partial reports a page that read ScanBudget rows (a scan) or its
	// search span (an indexed search) before it was full: older events may
	// still match; Next continues the search.
	Partial bool
}

// ScanFilter reports whether f has a filter no index serves (type,
// provider without event_id, event_id without provider, a payload search).
func (f EventFilter) ScanFilter() bool {
	return f.Type != "" || (f.Provider != "") != (f.EventID != "") || f.Search()
}

// indexedSearch reports whether a search index serves f: a payload search
// of one provider whose search is indexed.
func (ib Inbox) indexedSearch(f EventFilter) bool {
	return f.Search() && f.Provider != "" && f.EventID == "" && ib.SearchIndexed != nil && ib.SearchIndexed(f.Provider)
}

// ListEvents answers the rows f selects, newest first, limit at a time,
// after the cursor (nil: from the newest). f must be valid. See
// DefaultScanWindow and ScanBudget for filters no index serves.
func (ib Inbox) ListEvents(ctx context.Context, f EventFilter, after *EventCursor, limit int) (EventPage, error) {
	var page EventPage
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	// The indexed conditions, in the SQL only when set: a generic
	// "$1 IS NULL OR …" would hide them from the planner.
	var where []string
	if f.Provider != "" && f.EventID != "" {
		where = append(where, "provider = "+arg(f.Provider), "event_id = "+arg(f.EventID))
	}
	if f.State != "" {
		where = append(where, "processing_state = "+arg(f.State))
	}
	since, until := f.Since, f.Until
	scan, indexed := f.ScanFilter(), ib.indexedSearch(f)
	if scan && since == nil && until == nil {
		w := Window{Until: time.Now().UTC().Truncate(time.Second)}
		w.Since = w.Until.Add(-DefaultScanWindow)
		if after != nil && after.WindowSince != nil {
			w.Since = *after.WindowSince
		}
		since, page.Window = &w.Since, &w
	}
	if since != nil {
		where = append(where, "received_at >= "+arg(*since))
	}
	if until != nil {
		where = append(where, "received_at < "+arg(*until))
	}
	if after != nil {
		where = append(where, fmt.Sprintf("(received_at, provider, event_id) < (%s, %s, %s)", arg(after.ReceivedAt), arg(after.Provider), arg(after.EventID)))
	}
	cond := "true"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	const order = ` ORDER BY received_at DESC, provider DESC, event_id DESC`
	if indexed {
		// The provider as a constant, so that each partition's partial
		// index (WHERE provider = '<name>') is seen to apply; Validate
		// allows [A-Za-z0-9_.:/-] only.
		where = append(where, "provider = '"+f.Provider+"'")
		if f.Type != "" {
			where = append(where, "event_type = "+arg(f.Type))
		}
		where = append(where, f.searchConds(arg)...)
		lower := ib.spanStart(since, until, after)
		if lower != nil {
			where = append(where, "received_at >= "+arg(*lower))
		}
		events, err := ib.collect(ctx, `SELECT `+eventColumns+` FROM inbox WHERE `+strings.Join(where, " AND ")+order+` LIMIT `+arg(limit+1), args...)
		if err != nil {
			return page, err
		}
		if len(events) <= limit && lower != nil {
			if older, err := ib.olderRows(ctx, *lower); err != nil || !older {
				lower = nil // nothing older is kept: the search is over
				if err != nil {
					return page, err
				}
			}
		}
		return page.finishSpan(events, limit, lower), nil
	}
	if !scan {
		events, err := ib.collect(ctx, `SELECT `+eventColumns+` FROM inbox WHERE `+cond+order+` LIMIT `+arg(limit+1), args...)
		if err != nil {
			return page, err
		}
		return page.finish(events, limit, nil), nil
	}
	var match []string
	if f.Type != "" {
		match = append(match, "event_type = "+arg(f.Type))
	}
	if f.Provider != "" && f.EventID == "" {
		match = append(match, "provider = "+arg(f.Provider))
	}
	if f.EventID != "" && f.Provider == "" {
		match = append(match, "event_id = "+arg(f.EventID))
	}
	match = append(match, f.searchConds(arg)...)
	// read: at most ScanBudget rows in index order, numbered; the answer:
	// the matching ones, and the last row read when it is the budget's
	// last (its position ends a partial page). Rows are read only until
	// the page is full.
	sql := `SELECT * FROM (SELECT *, row_number() OVER () AS n FROM (SELECT ` + eventColumns + ` AS trace, ` + strings.Join(match, " AND ") + ` AS hit
FROM inbox WHERE ` + cond + order + ` LIMIT ` + arg(ScanBudget) + `) r) s WHERE hit OR n = ` + arg(ScanBudget) + ` LIMIT ` + arg(limit+1)
	events, last, err := ib.collectScan(ctx, sql, args...)
	if err != nil {
		return page, err
	}
	return page.finish(events, limit, last), nil
}

// spanStart is the start of the span an indexed search page reads when
// the window [since, until) (after the cursor) is longer than SearchSpan;
// nil when the window is within it.
func (ib Inbox) spanStart(since, until *time.Time, after *EventCursor) *time.Time {
	span := ib.SearchSpan
	if span <= 0 {
		span = DefaultSearchSpan
	}
	end := time.Now().UTC()
	if until != nil && until.Before(end) {
		end = *until
	}
	if after != nil && after.ReceivedAt.Before(end) {
		end = after.ReceivedAt
	}
	lower := end.Add(-span)
	if since != nil && !since.Before(lower) {
		return nil
	}
	return &lower
}

// olderRows reports whether the inbox keeps a row received before t: an
// indexed search whose span started after the oldest row goes on.
func (ib Inbox) olderRows(ctx context.Context, t time.Time) (bool, error) {
	var oldest *time.Time
	if err := ib.Pool.QueryRow(ctx, `SELECT min(received_at) FROM inbox`).Scan(&oldest); err != nil {
		return false, fmt.Errorf("query inbox: %w", err)
	}
	return oldest != nil && oldest.Before(t), nil
}

// finishSpan is finish for an indexed search page that read the span from
// lower (nil: the whole window): a page not full is Partial, and Next
// continues before lower.
func (page EventPage) finishSpan(events []*Event, limit int, lower *time.Time) EventPage {
	page = page.finish(events, limit, nil)
	if len(events) <= limit && lower != nil {
		page.Partial = true
		page.Next = &EventCursor{ReceivedAt: *lower}
		if page.Window != nil {
			page.Next.WindowSince = &page.Window.Since
		}
	}
	return page
}

// finish cuts events to limit and sets Next: after the last event of a
// full page, else after last (the oldest row a partial page read).
func (page EventPage) finish(events []*Event, limit int, last *Event) EventPage {
	page.Events = events
	var at *Event
	switch {
	case len(events) > limit:
		page.Events = events[:limit]
		at = page.Events[limit-1]
	case last != nil:
		at, page.Partial = last, true
	}
	if at != nil {
		page.Next = &EventCursor{ReceivedAt: at.ReceivedAt, Provider: at.Provider, EventID: at.EventID}
		if page.Window != nil {
			page.Next.WindowSince = &page.Window.Since
		}
	}
	return page
}

// collectScan reads ListEvents' scan query: the matching events, and the
// oldest row read when the budget ran out (nil otherwise).
func (ib Inbox) collectScan(ctx context.Context, sql string, args ...any) ([]*Event, *Event, error) {
	rows, err := ib.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("query inbox: %w", err)
	}
	defer rows.Close()
	events := []*Event{}
	var last *Event
	for rows.Next() {
		var e Event
		var attempts, replays int32
		var hit bool
		var n int64
		if err := rows.Scan(&e.Provider, &e.EventID, &e.Type, &e.ReceivedAt, &e.CreatedAt, &e.Verified, &e.SecretID,
			&e.ProcessingState, &attempts, &e.LastError, &e.LastErrorClass, &e.ProcessedAt, &e.NextAttemptAt, &replays, &e.UpdatedAt, &e.TraceID,
			&hit, &n); err != nil {
			return nil, nil, fmt.Errorf("scan inbox row: %w", err)
		}
		e.Attempts, e.Replays = int(attempts), int(replays)
		e.ReceivedAt, e.UpdatedAt = e.ReceivedAt.UTC(), e.UpdatedAt.UTC()
		if hit {
			events = append(events, &e)
		}
		if n == ScanBudget {
			last = &e
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read inbox: %w", err)
	}
	return events, last, nil
}

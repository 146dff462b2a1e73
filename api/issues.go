package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Statuses of a failure issue (docs/CONSUMERS.md "Failure issues").
const (
	IssueOpen         = "open"
	IssueAcknowledged = "acknowledged"
	IssueResolved     = "resolved"
	IssueMuted        = "muted"
)

// IssueStatuses are the statuses an issue can be set to.
var IssueStatuses = []string{IssueOpen, IssueAcknowledged, IssueResolved, IssueMuted}

// ErrIssueNotFound: no failure issue with that id.
var ErrIssueNotFound = errors.New("api: issue not found")

// MaxIssueReplay is the most dead events one replay of an issue
// re-enqueues; the answer says how many remain.
const MaxIssueReplay = 1000

// Issue is a failure issue: the failed attempts of one provider's events
// in one stage with one error fingerprint (consumers.Fingerprint).
type Issue struct {
	ID              int64      `json:"id"`
	Provider        string     `json:"provider"`
	Stage           string     `json:"stage"`
	Fingerprint     string     `json:"fingerprint"`
	ErrorClass      string     `json:"error_class"`
	Message         string     `json:"message"`
	LastError       string     `json:"last_error"`
	Status          string     `json:"status"`
	FirstSeen       time.Time  `json:"first_seen"`
	LastSeen        time.Time  `json:"last_seen"`
	StatusChangedAt time.Time  `json:"status_changed_at"`
	EventCount      int64      `json:"event_count"`
	Failures        int64      `json:"failures"`
	Reopened        int        `json:"reopened"`
	EventTypes      []string   `json:"event_types"`
	SampleEventIDs  []string   `json:"sample_event_ids"`
	ReplayedEvents  int64      `json:"replayed_events"`
	LastReplayedAt  *time.Time `json:"last_replayed_at,omitempty"`
	LastReplayedBy  *string    `json:"last_replayed_by,omitempty"`
	DeadEvents      *int64     `json:"dead_events,omitempty"` // GetIssue only: its events now dead
	ParkedKeys      *int64     `json:"parked_keys,omitempty"` // GetIssue only: keys parked behind its events (ordered destinations)
}

// IssueFilter selects issues: by status and provider ("" : any).
type IssueFilter struct {
	Status   string
	Provider string
}

// IssueCursor is the keyset position after the last issue of a page.
type IssueCursor struct {
	LastSeen time.Time `json:"l"`
	ID       int64     `json:"i"`
}

// String encodes c for a URL.
func (c IssueCursor) String() string { return encodeCursor(c) }

const issueColumns = `id, provider, stage, fingerprint, error_class, message, last_error, status, first_seen, last_seen,
  status_changed_at, event_count, failures, reopened, event_types, sample_event_ids, replayed_events, last_replayed_at, last_replayed_by`

func scanIssue(row pgx.Row) (*Issue, error) {
	var is Issue
	err := row.Scan(&is.ID, &is.Provider, &is.Stage, &is.Fingerprint, &is.ErrorClass, &is.Message, &is.LastError, &is.Status,
		&is.FirstSeen, &is.LastSeen, &is.StatusChangedAt, &is.EventCount, &is.Failures, &is.Reopened, &is.EventTypes, &is.SampleEventIDs,
		&is.ReplayedEvents, &is.LastReplayedAt, &is.LastReplayedBy)
	is.FirstSeen, is.LastSeen, is.StatusChangedAt = is.FirstSeen.UTC(), is.LastSeen.UTC(), is.StatusChangedAt.UTC()
	return &is, err
}

// ListIssues answers the issues f selects, the most recently seen first,
// limit at a time after the cursor (nil: from the newest); next is nil on
// the last page.
func (ib Inbox) ListIssues(ctx context.Context, f IssueFilter, after *IssueCursor, limit int) (issues []*Issue, next *IssueCursor, err error) {
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	where := []string{"true"}
	if f.Status != "" {
		where = append(where, "status = "+arg(f.Status))
	}
	if f.Provider != "" {
		where = append(where, "provider = "+arg(f.Provider))
	}
	if after != nil {
		where = append(where, fmt.Sprintf("(last_seen, id) < (%s, %s)", arg(after.LastSeen), arg(after.ID)))
	}
	rows, err := ib.Pool.Query(ctx, `SELECT `+issueColumns+` FROM failure_issues WHERE `+strings.Join(where, " AND ")+
		` ORDER BY last_seen DESC, id DESC LIMIT `+arg(limit+1), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("query failure issues: %w", err)
	}
	defer rows.Close()
	issues = []*Issue{}
	for rows.Next() {
		is, err := scanIssue(rows)
		if err != nil {
			return nil, nil, fmt.Errorf("scan failure issue: %w", err)
		}
		issues = append(issues, is)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read failure issues: %w", err)
	}
	if len(issues) > limit {
		issues = issues[:limit]
		last := issues[limit-1]
		next = &IssueCursor{LastSeen: last.LastSeen, ID: last.ID}
	}
	return issues, next, nil
}

// GetIssue answers one issue with the number of its events now dead;
// ErrIssueNotFound when there is none.
func (ib Inbox) GetIssue(ctx context.Context, id int64) (*Issue, error) {
	is, err := scanIssue(ib.Pool.QueryRow(ctx, `SELECT `+issueColumns+` FROM failure_issues WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrIssueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read failure issue: %w", err)
	}
	var dead int64
	if err := ib.Pool.QueryRow(ctx, `SELECT count(*) FROM failure_issue_events e JOIN inbox i
  ON i.provider = e.provider AND i.event_id = e.event_id AND i.received_at = e.received_at
WHERE e.issue_id = $1 AND i.processing_state = 'dead'`, id).Scan(&dead); err != nil {
		return nil, fmt.Errorf("count dead events of issue: %w", err)
	}
	is.DeadEvents = &dead
	parked, err := ib.issueParkedKeys(ctx, id)
	if err != nil {
		return nil, err
	}
	is.ParkedKeys = &parked
	return is, nil
}

// SetIssueStatus sets an issue's status (one of IssueStatuses) and answers
// the issue; ErrIssueNotFound when there is none.
func (ib Inbox) SetIssueStatus(ctx context.Context, id int64, status string) (*Issue, error) {
	is, err := scanIssue(ib.Pool.QueryRow(ctx, `UPDATE failure_issues SET status = $2,
  status_changed_at = CASE WHEN status = $2 THEN status_changed_at ELSE now() END
WHERE id = $1 RETURNING `+issueColumns, id, status))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrIssueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("set failure issue status: %w", err)
	}
	return is, nil
}

// IssueDeadEvents lists up to limit (provider, event id) pairs of the
// issue's events now dead, the least recently failed first, and how many
// there are in all.
func (ib Inbox) IssueDeadEvents(ctx context.Context, id int64, limit int) (events [][2]string, total int, err error) {
	rows, err := ib.Pool.Query(ctx, `SELECT e.provider, e.event_id, count(*) OVER () FROM failure_issue_events e JOIN inbox i
  ON i.provider = e.provider AND i.event_id = e.event_id AND i.received_at = e.received_at
WHERE e.issue_id = $1 AND i.processing_state = 'dead' ORDER BY e.last_seen, e.event_id LIMIT $2`, id, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("query dead events of issue: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p, e string
		if err := rows.Scan(&p, &e, &total); err != nil {
			return nil, 0, fmt.Errorf("scan dead event of issue: %w", err)
		}
		events = append(events, [2]string{p, e})
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read dead events of issue: %w", err)
	}
	return events, total, nil
}

// RecordIssueReplay records on the issue that by replayed n of its events
// now (the issue's audit; each event's replay has its own replays row).
func (ib Inbox) RecordIssueReplay(ctx context.Context, id int64, by string, n int) error {
	if _, err := ib.Pool.Exec(ctx, `UPDATE failure_issues SET replayed_events = replayed_events + $3,
  last_replayed_at = now(), last_replayed_by = $2 WHERE id = $1`, id, by, n); err != nil {
		return fmt.Errorf("record replay of failure issue: %w", err)
	}
	return nil
}

package consumers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/text"
)

// normalisers replace, in order, what differs between two occurrences of
// one failure: timestamps, UUIDs, prefixed ids (pay_1a2b…), hex strings of
// 8 characters or more with a digit and a letter (or a 0x prefix), and
// numbers other than an HTTP status.
var (
	timestamps = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?`)
	uuids      = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	prefixed   = regexp.MustCompile(`\b([A-Za-z]{1,16})_[A-Za-z0-9]*[0-9][A-Za-z0-9]*\b`)
	hexes      = regexp.MustCompile(`(?i)\b(0x)?[0-9a-f]{8,}\b`)
	numbers    = regexp.MustCompile(`(?i)(status:? )?\d+(\.\d+)?`)
	spaces     = regexp.MustCompile(`\s+`)
)

// NormalizeError is msg with what differs between occurrences of one
// failure replaced by placeholders (<time>, <uuid>, prefix_<id>, <hex>,
// <n>; "status 503" keeps its code) and whitespace collapsed.
func NormalizeError(msg string) string {
	msg = timestamps.ReplaceAllString(msg, "<time>")
	msg = uuids.ReplaceAllString(msg, "<uuid>")
	msg = prefixed.ReplaceAllString(msg, "${1}_<id>")
	msg = hexes.ReplaceAllStringFunc(msg, func(m string) string {
		l := strings.ToLower(m)
		if strings.HasPrefix(l, "0x") || (strings.ContainsAny(l, "0123456789") && strings.ContainsAny(l, "abcdef")) {
			return "<hex>"
		}
		return m // a word (deadbeef stays a word) or a number (below)
	})
	msg = numbers.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.HasPrefix(strings.ToLower(m), "status") {
			return m
		}
		return "<n>"
	})
	return strings.TrimSpace(spaces.ReplaceAllString(msg, " "))
}

// Fingerprint is the hex of the first 8 bytes of the SHA-256 of
// NormalizeError(msg): equal for two occurrences of one failure.
func Fingerprint(msg string) string {
	sum := sha256.Sum256([]byte(NormalizeError(msg)))
	return hex.EncodeToString(sum[:8])
}

// FailureSummary is what a failure issue keeps of err: its class of
// failure, never a text that a payload, a remote service's answer or a
// script supplied (a response body, a JavaScript exception, a fetch path
// holding an object id), so an erasure has nothing to find in
// failure_issues. It is the summary of the first error in err's chain
// that gives one (a FailureSummary method: fetch's APIError "provider api
// GET: status 404", forward's Error "forward to <destination>: status
// 503", forward's TransformError "forward to <destination>: transform
// failed"); else "<stage>: timeout", "<stage>: network error", "<stage>:
// database error <SQLSTATE>", the missing inbox row; else "<stage>:
// <class> failure". The event's own text stays on its inbox row
// (last_error), which an erasure clears with its payload.
func FailureSummary(err error) string {
	var s interface{ FailureSummary() string }
	if errors.As(err, &s) {
		return s.FailureSummary()
	}
	stage := event.Stage(err)
	var (
		pe *pgconn.PgError
		ne net.Error
	)
	switch {
	case event.IsTimeout(err):
		return stage + ": timeout"
	case errors.As(err, &ne):
		return stage + ": network error"
	case errors.As(err, &pe):
		return stage + ": database error " + pe.Code
	case errors.Is(err, errNoInbox):
		return stage + ": " + errNoInbox.Error()
	}
	return stage + ": " + event.Classify(err) + " failure"
}

// Bounds of an issue's lists.
const (
	issueEventTypes = 20 // affected event types kept
	issueSamples    = 10 // the last sample event ids kept
)

// upsertIssue counts one failed attempt of an event into its issue, in tx:
// a new issue is open; a resolved one reopens (muted and acknowledged keep
// their status). The event's row in failure_issue_events makes event_count
// count distinct events.
const upsertIssue = `INSERT INTO failure_issues AS i (provider, stage, fingerprint, error_class, message, last_error,
  failures, event_types, sample_event_ids, first_seen, last_seen, status_changed_at)
VALUES ($1, $2, $3, $4, $5, $6, 1, ARRAY[$7::text], ARRAY[$8::text], $9, $9, $9)
ON CONFLICT (provider, stage, fingerprint) DO UPDATE SET
  error_class = EXCLUDED.error_class, last_error = EXCLUDED.last_error,
  last_seen = greatest(i.last_seen, EXCLUDED.last_seen), failures = i.failures + 1,
  status = CASE WHEN i.status = 'resolved' THEN 'open' ELSE i.status END,
  reopened = i.reopened + CASE WHEN i.status = 'resolved' THEN 1 ELSE 0 END,
  status_changed_at = CASE WHEN i.status = 'resolved' THEN EXCLUDED.last_seen ELSE i.status_changed_at END,
  event_types = CASE WHEN $7 = ANY(i.event_types) OR cardinality(i.event_types) >= $10 THEN i.event_types
    ELSE i.event_types || $7::text END,
  sample_event_ids = (SELECT a[greatest(cardinality(a) - $11 + 1, 1):]
    FROM (SELECT array_remove(i.sample_event_ids, $8::text) || $8::text AS a) s)
RETURNING id`

// inSavepoint runs fn in a savepoint of tx, so a failure issue that
// cannot be written leaves tx's own writes standing: fn's error (the
// savepoint rolled back) or the savepoint's own is returned.
func inSavepoint(ctx context.Context, tx pgx.Tx, fn func(sp pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("failure issue: %w", err)
	}
	if err := fn(sp); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return fmt.Errorf("failure issue: %w", err)
	}
	return nil
}

// recordIssue counts the failure of one event (provider, eventID of type
// typ, received at receivedAt) into its issue in tx. The issue is keyed by
// the digest of msg (Fingerprint), and keeps summary (FailureSummary; ""
// is "<stage>: <class> failure") as its message and latest error, never
// msg itself: msg may quote the payload, and stays on the inbox row only.
func recordIssue(ctx context.Context, tx pgx.Tx, provider, eventID, typ string, receivedAt time.Time, stage, class, msg, summary string, now time.Time) error {
	if summary == "" {
		summary = stage + ": " + class + " failure"
	}
	summary = text.Truncate(summary, maxErrorMessage)
	var id int64
	if err := tx.QueryRow(ctx, upsertIssue, provider, stage, Fingerprint(msg), class, NormalizeError(summary), summary,
		typ, eventID, now, issueEventTypes, issueSamples).Scan(&id); err != nil {
		return fmt.Errorf("upsert failure issue: %w", err)
	}
	var inserted bool
	if err := tx.QueryRow(ctx, `INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at, last_seen)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (issue_id, provider, event_id) DO UPDATE SET last_seen = EXCLUDED.last_seen
RETURNING xmax = 0`, id, provider, eventID, receivedAt, now).Scan(&inserted); err != nil {
		return fmt.Errorf("record failure issue event: %w", err)
	}
	if inserted {
		if _, err := tx.Exec(ctx, `UPDATE failure_issues SET event_count = event_count + 1 WHERE id = $1`, id); err != nil {
			return fmt.Errorf("count failure issue event: %w", err)
		}
	}
	return nil
}

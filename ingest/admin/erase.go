package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Erasure selects the stored events whose payload is erased: exactly one
// of EventID (one event), ObjectID (every event about one object: its
// aggregate id at one of ObjectPaths) or Path with Value (every event whose
// payload holds Value at the dotted Path, e.g. data.object.customer).
type Erasure struct {
	Provider string
	EventID  string
	ObjectID string
	// ObjectPaths are the provider's aggregate id paths (its
	// aggregate_id_path); required with ObjectID. They also give the key of
	// an erasure notice whose event's outbox row is gone (noticeKeySQL).
	ObjectPaths []string
	// Topic is the provider's topic, where the erasure's notices are
	// published (one per event erased, erase_notice.go); "" is the default
	// topic (schemas.DefaultTopic).
	Topic       string
	Path, Value string
	// RequestedBy names who asked (audited); required. Reason is free text.
	RequestedBy, Reason string
	// AuditKey keys the digest the audit row keeps of an object id or a
	// path's value (Selector); the zero key keeps neither the value nor a
	// digest.
	AuditKey AuditKey
}

// ErasureResult is what an erasure did, the counts per table; ID is its
// audit row in erasures, which holds the same selector and counts.
type ErasureResult struct {
	ID       int64  `json:"id"`
	Selector string `json:"selector"` // Erasure.Selector: no object id or path value, a digest of it
	// Events is the inbox rows whose payload was erased; OutboxRows the
	// outbox copies erased; Objects the consumers' projections
	// (provider_objects rows) removed.
	Events     int `json:"events"`
	OutboxRows int `json:"outbox_rows"`
	Objects    int `json:"objects"`
	// Notices is the erasure notices written to the outbox (one per event
	// erased now), which the relay publishes on the provider's topic.
	Notices int `json:"notices"`
}

// ErrBadErasure is returned (wrapped, with the reason) for an erasure
// request that selects nothing well-defined.
var ErrBadErasure = errors.New("invalid erasure")

// Selector is the audited text of e's selector (the audit row, the
// answer, the log lines): "event <id>", "object <digest>" or "path <path>
// = <digest>", where digest is e.AuditKey.Digest of the object id or the
// value. The object id and the value, personal data, are never kept.
func (e Erasure) Selector() string {
	switch {
	case e.EventID != "":
		return "event " + e.EventID
	case e.ObjectID != "":
		return "object " + e.AuditKey.Digest(e.ObjectID)
	default:
		return "path " + e.Path + " = " + e.AuditKey.Digest(e.Value)
	}
}

func (e Erasure) validate() error {
	n := 0
	for _, set := range []bool{e.EventID != "", e.ObjectID != "", e.Path != "" || e.Value != ""} {
		if set {
			n++
		}
	}
	switch {
	case e.Provider == "":
		return fmt.Errorf("%w: provider is required", ErrBadErasure)
	case e.RequestedBy == "":
		return fmt.Errorf("%w: who requests it is required", ErrBadErasure)
	case n != 1:
		return fmt.Errorf("%w: give exactly one of an event id, an object id, or a path with a value", ErrBadErasure)
	case e.ObjectID != "" && len(e.ObjectPaths) == 0:
		return fmt.Errorf("%w: provider %s has no aggregate_id_path, so its events cannot be found by object; erase by path", ErrBadErasure, e.Provider)
	case (e.Path != "" || e.Value != "") && (e.Path == "" || e.Value == ""):
		return fmt.Errorf("%w: a path needs a value and a value a path", ErrBadErasure)
	case e.Path != "" && strings.Contains("."+e.Path+".", ".."):
		return fmt.Errorf("%w: path %q has an empty segment", ErrBadErasure, e.Path)
	}
	return nil
}

// Erase removes the payload of the selected stored events, in one
// transaction: each inbox row's payload becomes {"erased": true,
// "erasure_id": N} and its last_error is cleared (and the previous_error
// its replays rows copied), a row still to be
// processed (pending or retrying) becomes skipped, a final state, so no
// record of the event published before the erasure (a retry copy holding
// the payload) makes the consumers fetch the object again, the outbox rows of those
// events still in the outbox log get the same payload and are listed in
// outbox_erasures (so the relay, which in replication mode publishes the
// WAL image of the insert, publishes the marker instead of a payload erased
// before publication: ingest/relay/erased.go), and the consumers'
// projections those events were applied under are removed, whatever the
// selector (consumers_erase_events: the projection key, e.g. a fetch
// rule's contact/{id}, that the consumers recorded for each event; for an
// event erased before, by its id, its projection too), and for an object
// also a projection stored under the object id itself
// (consumers_erase_object). The dedupe keys stay, so a redelivery is still
// refused. Each event erased now gets an erasure notice in the outbox, in
// the same transaction (writeNotices: the relay publishes it on the
// provider's topic after the event, in both modes). An audit row records
// who, when, the selector and the counts, also when nothing matched. Events already erased are not counted
// again. Finding events by object or path reads every stored payload of
// the provider (no index): it takes as long as a scan of them.
func Erase(ctx context.Context, pool *pgxpool.Pool, e Erasure) (ErasureResult, error) {
	res := ErasureResult{Selector: e.Selector()}
	if err := e.validate(); err != nil {
		return res, err
	}
	var (
		where string
		args  = []any{e.Provider}
	)
	switch {
	case e.EventID != "":
		where, args = `event_id = $2`, append(args, e.EventID)
	case e.ObjectID != "":
		paths := make([]string, 0, len(e.ObjectPaths))
		for _, p := range e.ObjectPaths {
			paths = append(paths, pgArray(p))
		}
		where, args = `EXISTS (SELECT 1 FROM unnest($2::text[]) p WHERE payload #>> p::text[] = $3)`, append(args, paths, e.ObjectID)
	default:
		where, args = `payload #>> $2::text[] = $3`, append(args, strings.Split(e.Path, "."), e.Value)
	}
	keyPaths := make([]string, 0, len(e.ObjectPaths))
	for _, p := range e.ObjectPaths {
		keyPaths = append(keyPaths, pgArray(p))
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var requestedAt time.Time
		if err := tx.QueryRow(ctx, `INSERT INTO erasures (requested_by, provider, selector, reason, events, outbox_rows, objects)
VALUES ($1, $2, $3, $4, 0, 0, 0) RETURNING id, requested_at`, e.RequestedBy, e.Provider, res.Selector, e.Reason).Scan(&res.ID, &requestedAt); err != nil {
			return fmt.Errorf("audit erasure: %w", err)
		}
		n := len(args) + 1
		marker := fmt.Sprintf(`jsonb_build_object('erased', true, 'erasure_id', $%d::bigint)`, n)
		all := append(args, res.ID, keyPaths)
		var ids, keys []string // the events erased now, and their Kafka keys
		// target reads each event's key from its payload before the
		// payload is erased (all parts of one statement see one snapshot).
		err := tx.QueryRow(ctx, `WITH target AS (
  SELECT event_id, `+noticeKeySQL(n+1)+` AS agg FROM inbox
  WHERE provider = $1 AND `+where+` AND NOT payload @> '{"erased": true}'
  FOR UPDATE
), erased AS (
  UPDATE inbox SET payload = `+marker+`, last_error = NULL, updated_at = now(),
    processing_state = CASE WHEN processing_state IN ('pending', 'retrying') THEN 'skipped' ELSE processing_state END,
    next_attempt_at = CASE WHEN processing_state IN ('pending', 'retrying') THEN NULL ELSE next_attempt_at END,
    processed_at = CASE WHEN processing_state IN ('pending', 'retrying') THEN now() ELSE processed_at END
  WHERE provider = $1 AND event_id IN (SELECT event_id FROM target) AND NOT payload @> '{"erased": true}'
  RETURNING event_id
), ob AS (
  UPDATE outbox SET payload = `+marker+`
  WHERE aggregatetype = $1 AND event_id IN (SELECT event_id FROM erased)
  RETURNING id, event_id, aggregateid
), listed AS (
  INSERT INTO outbox_erasures (outbox_id, provider, event_id, erasure_id)
  SELECT id, $1, event_id, $`+fmt.Sprint(n)+`::bigint FROM ob
  ON CONFLICT (outbox_id) DO NOTHING
)
SELECT ARRAY(SELECT event_id FROM erased ORDER BY event_id),
  ARRAY(SELECT coalesce((SELECT ob.aggregateid FROM ob WHERE ob.event_id = x.event_id LIMIT 1),
      (SELECT t.agg FROM target t WHERE t.event_id = x.event_id LIMIT 1), x.event_id)
    FROM erased x ORDER BY x.event_id),
  (SELECT count(*) FROM ob)`, all...).Scan(&ids, &keys, &res.OutboxRows)
		if err != nil {
			return fmt.Errorf("erase payloads: %w", err)
		}
		if res.Notices, err = writeNotices(ctx, tx, e, res, requestedAt, ids, keys); err != nil {
			return err
		}
		res.Events = len(ids)
		if e.EventID != "" && len(ids) == 0 {
			ids = []string{e.EventID} // erased before: its projection may still be there
		}
		// A replay's row keeps the error the event had then (previous_error),
		// which may quote the payload (a response body, an exception).
		if _, err := tx.Exec(ctx, `UPDATE replays SET previous_error = NULL
WHERE provider = $1 AND event_id = ANY ($2) AND previous_error IS NOT NULL`, e.Provider, ids); err != nil {
			return fmt.Errorf("erase replay errors: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT consumers_erase_events($1, $2)`, e.Provider, ids).Scan(&res.Objects); err != nil {
			return fmt.Errorf("erase projections: %w", err)
		}
		if e.ObjectID != "" {
			var direct int // a projection stored under the object id itself
			if err := tx.QueryRow(ctx, `SELECT consumers_erase_object($1, $2)`, e.Provider, e.ObjectID).Scan(&direct); err != nil {
				return fmt.Errorf("erase object projection: %w", err)
			}
			res.Objects += direct
		}
		_, err = tx.Exec(ctx, `UPDATE erasures SET events = $2, outbox_rows = $3, objects = $4 WHERE id = $1`,
			res.ID, res.Events, res.OutboxRows, res.Objects)
		if err != nil {
			return fmt.Errorf("audit erasure: %w", err)
		}
		return nil
	})
	return res, err
}

// pgArray writes a dotted path as a PostgreSQL text[] literal ({a,"b c"}).
func pgArray(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

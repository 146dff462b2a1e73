package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/schemas"
)

// noticeKeySQL is the SQL expression of an inbox row's aggregate id read
// from its payload at the paths of parameter $n (a text[] of text[]
// literals, pgArray), the first path holding a non-empty string or a
// number, as AggregateID reads it; NULL when none does. Erase uses it for
// the key of a notice whose event has no outbox row left (outbox retention
// is shorter than the inbox's): the receiver wrote the same key then.
func noticeKeySQL(n int) string {
	return fmt.Sprintf(`(SELECT k.v FROM unnest($%d::text[]) WITH ORDINALITY AS p(path, i),
    LATERAL (SELECT CASE jsonb_typeof(payload #> p.path::text[])
      WHEN 'string' THEN nullif(payload #>> p.path::text[], '')
      WHEN 'number' THEN payload #>> p.path::text[] END AS v) k
  WHERE k.v IS NOT NULL ORDER BY p.i LIMIT 1)`, n)
}

// noticeOutboxSQL writes erasure notices into the outbox with the Writer's
// column list: no creation-time text of a provider (event_time is the
// erasure's time) and no trace context.
const noticeOutboxSQL = `INSERT INTO outbox ` + inbox.OutboxColumns + `
SELECT u.id, $1::text, u.key, $2::text, u.payload, u.ce_id, $3::text, $4::text, NULL
FROM unnest($5::uuid[], $6::text[], $7::jsonb[], $8::text[]) WITH ORDINALITY AS u(id, key, payload, ce_id, ord)
ORDER BY u.ord`

// writeNotices writes, in the erasure's transaction, one erasure notice
// (schemas.ErasureNotice) per event erased now into the outbox, so the
// relay publishes it on the provider's topic like an event, in both modes
// (and Debezium's Outbox Event Router as well). A notice per event, not
// per object: each is keyed like its event (keys[i], the event's outbox
// aggregateid, else the aggregate id in its payload, else its id), so it
// lands in the event's partition after the event, and its value stays
// small whatever the erasure selects. It holds the erasure id, the
// provider, the event id and the audit's selector: never the erased value
// or an object id (a keyed digest at most). It returns how many it wrote.
func writeNotices(ctx context.Context, tx pgx.Tx, e Erasure, res ErasureResult, at time.Time, ids, keys []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	topic := e.Topic
	if topic == "" {
		topic = schemas.DefaultTopic(e.Provider)
	}
	when := at.UTC().Format(time.RFC3339Nano)
	outboxIDs := make([]uuid.UUID, len(ids))
	payloads := make([][]byte, len(ids))
	ceIDs := make([]string, len(ids))
	for i, id := range ids {
		oid, err := uuid.NewV7()
		if err != nil {
			return 0, fmt.Errorf("erasure notice id: %w", err)
		}
		ceIDs[i] = schemas.ErasureNoticeID(res.ID, id)
		b, err := json.Marshal(schemas.ErasureNotice{ID: ceIDs[i], Type: schemas.ErasureNoticeType, CreatedAt: when,
			ErasureID: res.ID, Provider: e.Provider, EventIDs: []string{id}, Selector: res.Selector})
		if err != nil {
			return 0, fmt.Errorf("erasure notice: %w", err)
		}
		outboxIDs[i], payloads[i] = oid, b
	}
	tag, err := tx.Exec(ctx, noticeOutboxSQL, e.Provider, schemas.ErasureNoticeType, topic, when, outboxIDs, keys, payloads, ceIDs)
	if err != nil {
		return 0, fmt.Errorf("write erasure notices: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

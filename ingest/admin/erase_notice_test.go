package admin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestEraseWritesANoticePerErasedEvent: an erasure writes one notice per
// event it erases into the outbox, on the provider's topic, keyed like
// the event: the event's outbox aggregateid, else (its outbox row gone
// with its partition) the aggregate id in its payload at the provider's
// aggregate_id_path, else the event id. The notice names the erasure, the
// provider, the event and the audit's selector, never the value. An
// erasure that erases nothing new writes none.
func TestEraseWritesANoticePerErasedEvent(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	write := func(id, object, agg string) {
		t.Helper()
		now := time.Now()
		payload := `{"id":"` + id + `","data":{"object":{"id":"` + object + `","email":"n@example.com"}}}`
		if out := writeOne(t, w, inbox.Record{Provider: "p", EventID: id, Type: "t", CreatedAt: &now, Payload: []byte(payload),
			SecretID: "s", AggregateID: agg, Topic: "topic"}); !out.New {
			t.Fatalf("%s not new", id)
		}
	}
	write("n1", "pi_1", "pi_1")
	write("n2", "pi_2", "pi_2")
	write("n3", "", "n3") // no object: keyed by the event id
	write("n4", "77", "77")
	mustExec(t, base, `DELETE FROM outbox WHERE event_id IN ('n2', 'n4')`) // as if their partition was dropped
	mustExec(t, base, `UPDATE inbox SET payload = jsonb_set(payload, '{data,object,id}', '77'::jsonb) WHERE event_id = 'n4'`)
	e := Erasure{Provider: "p", Path: "data.object.email", Value: "n@example.com", ObjectPaths: []string{"data.object.id"},
		Topic: "erasures-topic", RequestedBy: "op"}
	res, err := Erase(ctx, base, e)
	if err != nil || res.Events != 4 || res.Notices != 4 {
		t.Fatalf("erase: %+v, %v", res, err)
	}
	rows, err := base.Query(ctx, `SELECT aggregatetype, aggregateid, type, payload::text, event_id, topic, event_time
FROM outbox WHERE type = $1 ORDER BY aggregateid`, schemas.ErasureNoticeType)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	keys := map[string]string{}
	for rows.Next() {
		var prov, key, typ, payload, ceID, topic, at string
		if err := rows.Scan(&prov, &key, &typ, &payload, &ceID, &topic, &at); err != nil {
			t.Fatal(err)
		}
		var n schemas.ErasureNotice
		if err := json.Unmarshal([]byte(payload), &n); err != nil {
			t.Fatal(err)
		}
		if prov != "p" || topic != "erasures-topic" || strings.Contains(payload, "example.com") || n.ErasureID != res.ID ||
			n.Provider != "p" || len(n.EventIDs) != 1 || ceID != schemas.ErasureNoticeID(res.ID, n.EventIDs[0]) || n.ID != ceID ||
			n.Type != schemas.ErasureNoticeType || n.Selector != res.Selector || n.CreatedAt != at {
			t.Errorf("notice %s %s %s %s: %s", key, ceID, topic, at, payload)
		}
		keys[n.EventIDs[0]] = key
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"n1": "pi_1", "n2": "pi_2", "n3": "n3", "n4": "77"}
	for id, k := range want {
		if keys[id] != k {
			t.Errorf("notice of %s keyed %q, want %q (all: %v)", id, keys[id], k, keys)
		}
	}
	res, err = Erase(ctx, base, e)
	if err != nil || res.Events != 0 || res.Notices != 0 {
		t.Fatalf("erase again: %+v, %v", res, err)
	}
}

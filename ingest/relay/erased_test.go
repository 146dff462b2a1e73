package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// testErasedBeforePublication: a row whose payload was erased (the
// outbox row's payload replaced by the marker and the row listed in
// outbox_erasures, as admin.Erase does) after its insert committed but
// before the relay published it reaches Kafka with the marker, never with
// the erased payload. In replication mode the WAL still holds the insert's
// image, so the relay must check before producing.
func testErasedBeforePublication(t *testing.T, e *env) {
	e.start().stop() // the slot exists: the inserts below wait in the WAL
	evs := e.newEvents("cus_1", 1, 2)
	e.mustInsert(evs...)
	if _, err := e.pool.Exec(context.Background(), `WITH ob AS (
  UPDATE outbox SET payload = '{"erased": true, "erasure_id": 41}' WHERE id = $1 RETURNING id, aggregatetype, event_id)
INSERT INTO outbox_erasures (outbox_id, provider, event_id, erasure_id) SELECT id, aggregatetype, event_id, 41 FROM ob`, evs[0].ID); err != nil {
		t.Fatal(err)
	}
	e.start()
	g := collect(t, e.brokers, []string{e.topic}, evs, 30*time.Second)
	for _, r := range g.recs {
		id := header(r, "gatehouse_outbox_id")
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("value %s: %v", r.Value, err)
		}
		switch id {
		case evs[0].ID:
			if v["erased"] != true || v["erasure_id"] != float64(41) || strings.Contains(string(r.Value), "cus_1") {
				t.Errorf("the erased row reached Kafka as %s, want the erasure marker", r.Value)
			}
		case evs[1].ID:
			if v["id"] != evs[1].EventID {
				t.Errorf("the other row reached Kafka as %s", r.Value)
			}
		}
	}
}

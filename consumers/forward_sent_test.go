package consumers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/internal/redact"
	"github.com/gatehouse/gatehouse/schemas"
)

// A destination behind a transform: what the transform sent (body and
// extra headers), or that it dropped the event, is recorded in
// forward_deliveries for the console's event page, and erasing the event
// clears the recorded body (a copy of the payload) with the rest. The
// headers it set are recorded by name, their values masked: one may be a
// credential (Authorization).
func TestForwardRecordsWhatATransformSent(t *testing.T) {
	svc := newTeamService(t)
	pl := refForwardPipeline(t, fmt.Sprintf(`      - url: %s
        secret: env:FWD_SECRET
        transform: |
          function handler(webhook) {
            const id = webhook.payload.data.event.data.payment_id;
            if (id.endsWith("drop")) { webhook.cancel = true; return webhook; }
            webhook.payload = {payment: id, kind: webhook.eventType};
            webhook.headers["X-Team-Route"] = "billing";
            webhook.headers["Authorization"] = "Bearer team-token-7f7f";
            return webhook;
          }
`, svc.URL()))
	pl.sendRef("sent_1", "pay_keep")
	pl.sendRef("sent_2", "pay_drop")
	pl.waitState(schemas.StateSucceeded, 60*time.Second, "sent_1", "sent_2")

	type row struct {
		body    []byte
		headers map[string]string
		dropped bool
	}
	read := func(id string) row {
		t.Helper()
		var r row
		if err := pl.pool.QueryRow(t.Context(), `SELECT body, headers, dropped FROM forward_deliveries WHERE provider = 'ref' AND event_id = $1`, id).
			Scan(&r.body, &r.headers, &r.dropped); err != nil {
			t.Fatalf("forward_deliveries of %s: %v", id, err)
		}
		return r
	}
	kept := read("sent_1")
	if b := gjson.ParseBytes(kept.body); b.Get("payment").Str != "pay_keep" || b.Get("kind").Str == "" || kept.dropped {
		t.Errorf("recorded body %s (dropped %v), want the transformed body", kept.body, kept.dropped)
	}
	if len(kept.headers) != 2 || kept.headers["X-Team-Route"] != redact.Masked || kept.headers["Authorization"] != redact.Masked {
		t.Errorf("recorded headers %v, want X-Team-Route and Authorization, values masked", kept.headers)
	}
	var stored string
	if err := pl.pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(headers::text, ''), '') FROM forward_deliveries`).Scan(&stored); err != nil ||
		strings.Contains(stored, "team-token-7f7f") || strings.Contains(stored, "billing") {
		t.Errorf("forward_deliveries.headers hold a value: %s %v", stored, err)
	}
	svc.Mu.Lock()
	received := string(svc.Bodies["ref:sent_1"])
	svc.Mu.Unlock()
	if received != string(kept.body) {
		t.Errorf("recorded %s, the team received %s", kept.body, received)
	}
	if dropped := read("sent_2"); !dropped.dropped || dropped.body != nil {
		t.Errorf("a dropped delivery recorded as dropped=%v body=%s", dropped.dropped, dropped.body)
	}

	if _, err := pl.pool.Exec(t.Context(), `SELECT consumers_erase_events('ref', ARRAY['sent_1'])`); err != nil {
		t.Fatal(err)
	}
	if erased := read("sent_1"); erased.body != nil || erased.headers != nil {
		t.Errorf("after erasure forward_deliveries still holds body %s headers %v", erased.body, erased.headers)
	}
}

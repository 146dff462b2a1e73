package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestErasureNoticeReachesHTTPDestinations: after an erasure, each
// forward destination of the provider receives the erasure notice of
// each erased event as a delivery signed with Standard Webhooks (the team
// service verifies it with the official library), of type
// gatehouse.erasure, whatever the entry's types, webhook-id
// "<provider>:erasure:<erasure id>:<event id>", its data.event the notice
// naming the event and never the erased value. A destination configured
// with erasure_notices: false receives none, and no notice is applied as
// an event (no processed_events row).
func TestErasureNoticeReachesHTTPDestinations(t *testing.T) {
	const email = "zoe.notice@example.org"
	team, optedOut := newTeamService(t), newTeamService(t)
	pl := refForwardPipeline(t, fmt.Sprintf(`      - url: %s
        secret: env:FWD_SECRET
        types: ["payment.*"]
      - url: %s
        secret: env:FWD_SECRET
        erasure_notices: false
`, team.URL(), optedOut.URL()))
	body := fmt.Sprintf(`{"id":"ntc_1","type":"payment.succeeded","created_at":%q,"data":{"payment_id":"pay_ntc","email":%q}}`,
		time.Now().UTC().Format(time.RFC3339), email)
	pl.send("ntc_1", []byte(body), "", nil)
	pl.waitState(schemas.StateSucceeded, 60*time.Second, "ntc_1")
	res, err := admin.Erase(context.Background(), pl.pool, admin.Erasure{Provider: "ref", EventID: "ntc_1", Topic: pl.topic, RequestedBy: "test"})
	if err != nil || res.Notices != 1 {
		t.Fatalf("erase: %+v %v", res, err)
	}
	pl.relay()
	id := "ref:" + schemas.ErasureNoticeID(res.ID, "ntc_1")
	waitFor(t, 60*time.Second, "the notice delivered", func() bool {
		got, _ := team.Counts()
		return got[id] == 1
	})
	got, invalid := team.Counts()
	if invalid != 0 || got["ref:ntc_1"] != 1 {
		t.Errorf("team service: %v, %d invalid signatures", got, invalid)
	}
	team.Mu.Lock()
	raw := team.Bodies[id]
	team.Mu.Unlock()
	var d struct {
		Type string `json:"type"`
		Data struct {
			EventID string                `json:"event_id"`
			Type    string                `json:"type"`
			Event   schemas.ErasureNotice `json:"event"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Type != schemas.ErasureNoticeType || d.Data.Type != schemas.ErasureNoticeType ||
		d.Data.EventID != schemas.ErasureNoticeID(res.ID, "ntc_1") || d.Data.Event.ErasureID != res.ID ||
		len(d.Data.Event.EventIDs) != 1 || d.Data.Event.EventIDs[0] != "ntc_1" || strings.Contains(string(raw), email) {
		t.Errorf("notice delivery %s (%v)", raw, err)
	}
	time.Sleep(500 * time.Millisecond) // the opted-out destination had the same time
	if got, _ := optedOut.Counts(); got[id] != 0 || got["ref:ntc_1"] != 1 {
		t.Errorf("the destination with erasure_notices: false received %v", got)
	}
	var processed int
	if err := pl.pool.QueryRow(context.Background(), `SELECT count(*) FROM processed_events WHERE event_id LIKE 'erasure:%'`).Scan(&processed); err != nil || processed != 0 {
		t.Errorf("%d notices applied as events (%v)", processed, err)
	}
}

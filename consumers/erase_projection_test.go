package consumers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// TestEraseRemovesProjectionsAppliedUnderTheRuleKey: a HubSpot-like fetch
// rule stores its objects under key contact/{data.objectId}, not under the
// event's aggregate id. Erasing by object (the aggregate id 123), by event
// or by path removes the projection the erased events were applied under.
func TestEraseRemovesProjectionsAppliedUnderTheRuleKey(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	w, err := inbox.NewWriter(pool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		_, _ = rw.Write([]byte(`{"id":"x","properties":{"email":"ann@example.com"},"updatedAt":"2026-01-01T00:00:00Z"}`))
	}))
	defer srv.Close()
	api, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: srv.URL, Key: []byte("tok")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fetch.NewFetcher([]providers.Fetch{{Types: []string{"contact.*"}, Object: "contact", Key: "contact/{data.objectId}",
		URL: "/crm/v3/objects/contacts/{data.objectId}", Version: []string{"updatedAt"}}}, api, "")
	if err != nil {
		t.Fatal(err)
	}
	s := store{pool: pool}
	apply := func(id, objectID string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"id": id, "type": "contact.propertyChange",
			"data": map[string]any{"objectId": objectID, "email": "ann@example.com"}})
		if _, err := w.Write(ctx, inbox.Record{Provider: "hs", EventID: id, Type: "contact.propertyChange", Payload: body,
			SecretID: "s", AggregateID: objectID, Topic: "t"}); err != nil {
			t.Fatal(err)
		}
		ev := &event.Event{Provider: "hs", ID: id, Type: "contact.propertyChange", Envelope: body}
		eff, err := f.Handle(ctx, ev, event.NewBatch(s))
		if err != nil {
			t.Fatal(err)
		}
		if eff.ObjectID != "contact/"+objectID {
			t.Fatalf("projection key %q", eff.ObjectID)
		}
		if _, _, err := s.claim(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if out, err := s.apply(ctx, ev, eff); err != nil || out != OutcomeOK {
			t.Fatalf("apply %s: %q %v", id, out, err)
		}
	}
	projected := func(key string) bool {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_objects WHERE provider = 'hs' AND object_id = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	apply("e1", "123")
	apply("e2", "456")
	apply("e3", "789")
	for _, k := range []string{"contact/123", "contact/456", "contact/789"} {
		if !projected(k) {
			t.Fatalf("%s not projected", k)
		}
	}
	paths := []string{"data.objectId"}
	for _, tc := range []struct {
		name string
		e    admin.Erasure
		gone string
	}{
		{"by object", admin.Erasure{ObjectID: "123", ObjectPaths: paths}, "contact/123"},
		{"by event", admin.Erasure{EventID: "e2"}, "contact/456"},
		{"by path", admin.Erasure{Path: "data.objectId", Value: "789"}, "contact/789"},
	} {
		tc.e.Provider, tc.e.RequestedBy = "hs", "op"
		res, err := admin.Erase(ctx, pool, tc.e)
		if err != nil || res.Events != 1 || res.Objects != 1 {
			t.Errorf("erase %s: %+v, %v; want 1 event and 1 projection", tc.name, res, err)
		}
		if projected(tc.gone) {
			t.Errorf("erase %s: the projection %s is still stored", tc.name, tc.gone)
		}
	}
	// An event erased before (its projection left behind by an older
	// gatehouse) is found again by its id.
	apply("e4", "999")
	if _, err := pool.Exec(ctx, `UPDATE inbox SET payload = '{"erased": true, "erasure_id": 0}' WHERE event_id = 'e4'`); err != nil {
		t.Fatal(err)
	}
	if res, err := admin.Erase(ctx, pool, admin.Erasure{Provider: "hs", EventID: "e4", RequestedBy: "op"}); err != nil || res.Objects != 1 || projected("contact/999") {
		t.Errorf("erase of an already erased event: %+v, %v; want its projection removed", res, err)
	}
}

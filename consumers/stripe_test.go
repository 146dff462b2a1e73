package consumers

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// Stripe events are processed against stripe-mock (Stripe's official API
// mock, run as its own process): the projection holds the object fetched
// from the API, not the webhook body; a rejected API key is permanent.
func TestStripeObjectsFromStripeMock(t *testing.T) {
	sm, err := testenv.StartStripeMock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Stop)
	f := newFixtureFor(t, "stripe")
	cfg := f.config(nil)
	reg := NewRegistry()
	good, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: sm.URL, Key: []byte("sk_test_gatehouse"), Version: "2025-08-27.basil", VersionHeader: "Stripe-Version"})
	if err != nil {
		t.Fatal(err)
	}
	registerCatalogue(reg, "stripe", "stripe", good)
	cfg.Handlers = reg
	_, stop := f.start(cfg)
	f.ingestData("evt_s1", "payment_intent.succeeded", "pi_gh1", map[string]any{
		"object": map[string]any{"id": "pi_gh1", "object": "payment_intent", "status": "from-the-webhook-body"}})
	f.ingestData("evt_s2", "invoice.paid", "in_gh1", map[string]any{
		"object": map[string]any{"id": "in_gh1", "object": "invoice"}})
	f.ingestData("evt_s3", "customer.subscription.updated", "sub_gh1", map[string]any{
		"object": map[string]any{"id": "sub_gh1", "object": "subscription"}})
	f.ingestData("evt_s4", "balance.available", "evt_s4", map[string]any{"object": map[string]any{"object": "balance"}})
	f.relay()
	f.waitState(schemas.StateSucceeded, 30*time.Second, "evt_s1", "evt_s2", "evt_s3")
	f.waitState(schemas.StateSkipped, 30*time.Second, "evt_s4")
	rows, err := f.pool.Query(context.Background(), `SELECT object_id, object_type, data->>'object', coalesce(data->>'status','') FROM provider_objects WHERE provider = 'stripe' ORDER BY object_id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]string{}
	for rows.Next() {
		var id, typ, obj, status string
		if err := rows.Scan(&id, &typ, &obj, &status); err != nil {
			t.Fatal(err)
		}
		got[id] = [3]string{typ, obj, status}
	}
	rows.Close()
	if g := got["pi_gh1"]; g[0] != "payment_intent" || g[1] != "payment_intent" || g[2] == "from-the-webhook-body" || g[2] == "" {
		t.Errorf("pi_gh1 = %v, want the payment_intent from stripe-mock", g)
	}
	if g := got["in_gh1"]; g[1] != "invoice" {
		t.Errorf("in_gh1 = %v", g)
	}
	if g := got["sub_gh1"]; g[1] != "subscription" {
		t.Errorf("sub_gh1 = %v", g)
	}
	stop()

	// A key stripe-mock rejects (401) is a permanent failure: dead at once.
	bad, _ := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: sm.URL, Key: []byte("not-a-stripe-key"), VersionHeader: "Stripe-Version"})
	reg = NewRegistry()
	registerCatalogue(reg, "stripe", "stripe", bad)
	cfg.Handlers = reg
	f.start(cfg)
	f.ingestData("evt_s5", "charge.succeeded", "ch_gh1", map[string]any{"object": map[string]any{"id": "ch_gh1", "object": "charge"}})
	f.relay()
	f.waitState(schemas.StateDead, 30*time.Second, "evt_s5")
	if r := f.inbox("evt_s5"); r.LastErrorClass != event.ClassPermanent || !contains(r.LastError, "401") {
		t.Errorf("inbox = %+v, want permanent 401", r)
	}
}

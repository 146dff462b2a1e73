package api_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// searchFixture stores a few payloads of provider "shop" and one of
// "other", received within the last hours, and one erased payload.
func searchFixture(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id) VALUES
('shop', 'o1', 'order.created', '{"data":{"object":{"customer":"cus_123","total":1999,"items":[{"sku":"a"},{"sku":"b"}]}}}', now() - interval '3 hours', true, 's'),
('shop', 'o2', 'order.paid',    '{"data":{"object":{"customer":"cus_123","total":"1999","items":[{"sku":"b"}]}}}', now() - interval '2 hours', true, 's'),
('shop', 'o3', 'order.created', '{"data":{"object":{"customer":"cus_999","total":5,"items":[]}}}', now() - interval '1 hour', true, 's'),
('shop', 'o4', 'order.created', '{"erased": true, "erasure_id": 7}', now() - interval '30 minutes', true, 's'),
('shop', 'old', 'order.created', '{"data":{"object":{"customer":"cus_123"}}}', now() - interval '3 days', true, 's'),
('other', 'x1', 'order.created', '{"data":{"object":{"customer":"cus_123"}}}', now() - interval '1 hour', true, 's')`)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// Payload search (issue 38): a containment match and path=value
// conditions select events by what they hold, alone or with the other
// filters, over the last 24 hours unless since/until say otherwise; the
// answers are the same whether a search index serves them or a bounded
// scan does; an erased payload is never found by what it held.
func TestPayloadSearch(t *testing.T) {
	pool := searchFixture(t)
	ctx := context.Background()
	for _, indexed := range []bool{false, true} {
		ib := api.Inbox{Pool: pool}
		name := "scan"
		if indexed {
			ib.SearchIndexed = func(p string) bool { return p == "shop" }
			name = "indexed"
		}
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				name string
				f    api.EventFilter
				want []string // newest first
			}{
				{"match one provider", api.EventFilter{Provider: "shop", Match: `{"data":{"object":{"customer":"cus_123"}}}`}, []string{"o2", "o1"}},
				{"match all providers", api.EventFilter{Match: `{"data":{"object":{"customer":"cus_123"}}}`}, []string{"x1", "o2", "o1"}},
				{"path string", api.EventFilter{Provider: "shop", Paths: []api.PathValue{{Path: "data.object.customer", Value: "cus_999"}}}, []string{"o3"}},
				{"path number or its text", api.EventFilter{Provider: "shop", Paths: []api.PathValue{{Path: "data.object.total", Value: "1999"}}}, []string{"o2", "o1"}},
				{"path array element", api.EventFilter{Provider: "shop", Paths: []api.PathValue{{Path: "data.object.items.1.sku", Value: "b"}}}, []string{"o1"}},
				{"array element anywhere by match", api.EventFilter{Provider: "shop", Match: `{"data":{"object":{"items":[{"sku":"b"}]}}}`}, []string{"o2", "o1"}},
				{"with type", api.EventFilter{Provider: "shop", Type: "order.paid", Match: `{"data":{"object":{"customer":"cus_123"}}}`}, []string{"o2"}},
				{"two conditions", api.EventFilter{Provider: "shop", Paths: []api.PathValue{{Path: "data.object.customer", Value: "cus_123"}, {Path: "data.object.items.0.sku", Value: "a"}}}, []string{"o1"}},
				{"no match", api.EventFilter{Provider: "shop", Match: `{"data":{"object":{"customer":"cus_nobody"}}}`}, nil},
			} {
				page, err := ib.ListEvents(ctx, c.f, nil, 10)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				var got []string
				for _, e := range page.Events {
					got = append(got, e.EventID)
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: %v, want %v", c.name, got, c.want)
				}
				if page.Window == nil {
					t.Errorf("%s: no window: a search without since/until covers the last 24 hours", c.name)
				}
			}
			// The erased event held cus_123 before its erasure: nothing finds it.
			page, err := ib.ListEvents(ctx, api.EventFilter{Provider: "shop", Match: `{"erasure_id":7}`}, nil, 10)
			if err != nil || len(page.Events) != 1 || page.Events[0].EventID != "o4" {
				t.Fatalf("the marker itself is searchable: %v %v", page.Events, err)
			}
			// Paging: one at a time, the cursor keeps the window.
			f := api.EventFilter{Provider: "shop", Match: `{"data":{"object":{"customer":"cus_123"}}}`}
			p1, err := ib.ListEvents(ctx, f, nil, 1)
			if err != nil || len(p1.Events) != 1 || p1.Next == nil {
				t.Fatalf("first page: %v %v", p1, err)
			}
			p2, err := ib.ListEvents(ctx, f, p1.Next, 1)
			if err != nil || len(p2.Events) != 1 || p2.Events[0].EventID != "o1" {
				t.Fatalf("second page: %v %v", p2.Events, err)
			}
		})
	}
}

// A search's malformed conditions are 400s naming the member (POST
// /api/v1/events/search); the console's state= is the API's
// processing_state=; a payload search in a GET's URL is refused naming
// the POST form (searchEvents' test: TestPayloadSearchIsPosted).
func TestPayloadSearchParameters(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	op := f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})
	for body, want := range map[string]string{
		`{"match":[1,2]}`: "match must be a JSON object",
		`{"match":"x"}`:   "match must be a JSON object",
		`{"match":{"a":`:  "body must be a JSON object",
		`{"provider":""}`: "provider must not be empty",
		`{"paths":[{"path":"data..x","value":"1"}]}`: "is not a dotted path",
		`{"paths":[{"path":"a b","value":"1"}]}`:     "is not a dotted path",
		`{"processing_state":"nonsense"}`:            "processing_state must be one of",
		`{"limit":0}`:                                "limit must be",
		`{"unknown":1}`:                              "body must be a JSON object",
	} {
		a := f.postSearch(body, op)
		if desc, _ := a.body["error_description"].(string); a.status != 400 || !strings.Contains(desc, want) {
			t.Errorf("%s: %d %s; want 400 naming %q", body, a.status, a.raw, want)
		}
	}
	if a := f.bearerGet("/api/v1/events?state=nonsense", op); a.status != 400 || !strings.Contains(a.raw, "processing_state must be one of") {
		t.Errorf("GET ?state=nonsense: %d %s", a.status, a.raw)
	}
	a := f.postSearch(`{"paths":[{"path":"data.payment_id","value":"pay_1"}],"match":{"type":"payment.succeeded"}}`, op)
	if a.status != 200 {
		t.Fatalf("a valid search: %d %s", a.status, a.raw)
	}
}

// postSearch posts body to /api/v1/events/search with a bearer token.
func (f *fixture) postSearch(body, token string) answer {
	f.t.Helper()
	return f.do("POST", "/api/v1/events/search", strings.NewReader(body), "Authorization", "Bearer "+token, "Content-Type", "application/json")
}

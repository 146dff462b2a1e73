package consumers

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// The catalogue's fetch rules of Shopify, Square, Paddle, HubSpot,
// GitLab, Intercom, Clerk, Resend, Zoom, Typeform and Postmark, each through the real pipeline (signed webhook → receiver →
// relay → consumer). None of these providers publishes an OpenAPI
// description on a package registry this build can reach (npm, PyPI,
// Maven Central, crates.io: Shopify's REST Admin API has none at all;
// Square's, HubSpot's, GitLab's, Intercom's, Zoom's and Resend's
// live in GitHub repositories or on the providers' sites, Clerk's, Paddle's,
// Typeform's and Postmark's on their sites), so Prism cannot serve them: a local handler serves each
// object in the shape of the API reference's example response (cited in
// schemas/providers/fetchcat.go), abridged to the fields the rules and
// the test read, and checks the provider's authentication.

// docAPI serves documented example objects by path; "…/missing…" paths
// answer 404 and "…/moved…" a redirect.
type docAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	objects map[string]string
	auth    func(*http.Request) bool
	badAuth atomic.Int64
	moved   atomic.Int64
}

func newDocAPI(t *testing.T, auth func(*http.Request) bool, objects map[string]string) *docAPI {
	a := &docAPI{objects: objects, auth: auth}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.auth(r) {
			a.badAuth.Add(1)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/elsewhere/"):
			a.moved.Add(1)
		case strings.Contains(r.URL.Path, "moved"):
			http.Redirect(w, r, "/elsewhere"+r.URL.Path, http.StatusMovedPermanently)
			return
		}
		a.mu.Lock()
		body, ok := a.objects[docKey(r)]
		if !ok {
			body, ok = a.objects[r.URL.Path]
		}
		a.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// docKey is the objects key of a request beside its path: "<path>#<id>"
// for a GraphQL POST (variables.id), "<path>?<query>" for a query.
func docKey(r *http.Request) string {
	if r.Method == http.MethodPost {
		var q struct {
			Variables map[string]string `json:"variables"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &q) == nil && q.Variables["id"] != "" {
			return r.URL.Path + "#" + q.Variables["id"]
		}
	}
	return r.URL.Path + "?" + r.URL.RawQuery
}

// providerCase is one provider's test: its YAML, the deliveries to send and
// the objects expected in provider_objects.
type providerCase struct {
	secret string // the signing secret; default test-secret-<name>
	// signWith signs the deliveries when it differs from secret (Discord:
	// secret is the public key, signWith the private seed).
	signWith string
	yaml     string // after scheme and secrets; %s is the API's URL
	auth     func(*http.Request) bool
	objects  map[string]string // API path → answer
	sends    []delivery
	want     map[string]wantObject // provider_objects key → expectation
	dead     int                   // deliveries expected dead (404, redirect, refused URL, error answer)
}

// docSubst replaces {{api}} by the documented-example API's URL and
// {{now_ms}} by the current Unix time in milliseconds (Linear's signed
// webhookTimestamp).
func docSubst(s, api string) string {
	s = strings.ReplaceAll(s, "{{api}}", api)
	return strings.ReplaceAll(s, "{{now_ms}}", strconv.FormatInt(time.Now().UnixMilli(), 10))
}

type delivery struct {
	id, body, contentType string
	header                http.Header
}

type wantObject struct{ typ, version, has string }

func bearer(tok string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+tok }
}

func TestProviderFetchRulesAgainstDocumentedExamples(t *testing.T) {
	cases := providerCases()
	for name, tc := range restProviderCases() {
		cases[name] = tc
	}
	for name, tc := range apiProviderCases() {
		cases[name] = tc
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api := newDocAPI(t, tc.auth, tc.objects)
			secret := tc.secret
			if secret == "" {
				secret = "test-secret-" + name
			}
			pl := newPipeline(t, name, "    scheme: "+name+"\n    secrets: [{id: s1, value: \""+secret+"\"}]\n"+fmt.Sprintf(tc.yaml, api.srv.URL))
			if tc.signWith != "" {
				pl.signSecret = []byte(tc.signWith)
			}
			start := time.Now()
			for _, d := range tc.sends {
				pl.send(d.id, []byte(docSubst(d.body, api.srv.URL)), d.contentType, d.header)
			}
			deadline := time.Now().Add(60 * time.Second)
			var ids []string
			for len(ids) < len(tc.sends) && time.Now().Before(deadline) {
				ids = pl.eventIDs()
				time.Sleep(50 * time.Millisecond)
			}
			final := map[string]bool{schemas.StateSucceeded: true, schemas.StateDead: true, schemas.StateSkipped: true}
			dead := 0
			for _, id := range ids {
				for {
					r := pl.inbox(id)
					if final[r.State] {
						if r.State == schemas.StateDead {
							dead++
							if r.LastErrorClass != event.ClassPermanent || !(strings.Contains(r.LastError, "status 404") || strings.Contains(r.LastError, "redirect") ||
								strings.Contains(r.LastError, "not requested") || strings.Contains(r.LastError, "the answer's")) {
								t.Errorf("%s dead: %+v, want a permanent 404, redirect, refused URL or error answer", id, r)
							}
						}
						if r.State == schemas.StateSkipped {
							t.Errorf("%s skipped", id)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s is %s after 60s", id, r.State)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			if dead != tc.dead {
				t.Errorf("%d dead events, want %d", dead, tc.dead)
			}
			for key, w := range tc.want {
				typ, v, data := pl.object(docSubst(key, api.srv.URL))
				want, err := strconv.ParseInt(w.version, 10, 64)
				switch {
				case w.version == "fetched":
					want = v
					if v < start.UnixMicro() || v > time.Now().UnixMicro() {
						t.Errorf("%s: version %d is not the fetch time", key, v)
					}
				case err != nil:
					want = testkit.Micros(t, w.version)
				}
				if typ != w.typ || v != want {
					t.Errorf("%s: %s version %d, want %s version %s", key, typ, v, w.typ, w.version)
				}
				mustContain(t, key, data, w.has)
			}
			if n := api.badAuth.Load(); n != 0 {
				t.Errorf("%d requests without the provider's authentication", n)
			}
			if n := api.moved.Load(); n != 0 {
				t.Errorf("a redirect was followed %d times", n)
			}
		})
	}
}

func providerCases() map[string]providerCase {
	shopifyHdr := func(topic string) http.Header {
		return http.Header{"X-Shopify-Topic": {topic}, "X-Shopify-Shop-Domain": {"shop.myshopify.com"}}
	}
	return map[string]providerCase{
		"shopify": {
			yaml: "    api_url: %s\n    api_key: shpat_test\n    api_version: \"2025-07\"\n",
			auth: func(r *http.Request) bool { return r.Header.Get("X-Shopify-Access-Token") == "shpat_test" },
			objects: map[string]string{
				"/admin/api/2025-07/orders/450789469.json":    `{"order":{"id":450789469,"admin_graphql_api_id":"gid://shopify/Order/450789469","name":"#1001","financial_status":"paid","created_at":"2008-01-10T11:00:00-05:00","updated_at":"2008-01-10T11:00:00-05:00"}}`,
				"/admin/api/2025-07/products/632910392.json":  `{"product":{"id":632910392,"admin_graphql_api_id":"gid://shopify/Product/632910392","title":"IPod Nano - 8GB","created_at":"2025-07-01T14:02:01-04:00","updated_at":"2025-07-01T14:02:01-04:00"}}`,
				"/admin/api/2025-07/customers/207119551.json": `{"customer":{"id":207119551,"admin_graphql_api_id":"gid://shopify/Customer/207119551","email":"bob.norman@mail.example.com","updated_at":"2025-07-01T14:03:11-04:00"}}`,
			},
			sends: []delivery{
				{id: "wh-order", body: `{"id":450789469,"admin_graphql_api_id":"gid://shopify/Order/450789469","financial_status":"pending"}`, header: shopifyHdr("orders/updated")},
				{id: "wh-product", body: `{"id":632910392,"admin_graphql_api_id":"gid://shopify/Product/632910392"}`, header: shopifyHdr("products/update")},
				{id: "wh-customer", body: `{"id":207119551,"admin_graphql_api_id":"gid://shopify/Customer/207119551"}`, header: shopifyHdr("customers/update")},
				{id: "wh-missing", body: `{"id":1,"admin_graphql_api_id":"gid://shopify/Order/1"}`, header: shopifyHdr("orders/updated")},
			},
			want: map[string]wantObject{
				"gid://shopify/Order/450789469":    {"order", "2008-01-10T11:00:00-05:00", `"financial_status": "paid"`},
				"gid://shopify/Product/632910392":  {"product", "2025-07-01T14:02:01-04:00", `IPod Nano`},
				"gid://shopify/Customer/207119551": {"customer", "2025-07-01T14:03:11-04:00", `bob.norman`},
			},
			dead: 1,
		},
		"square": {
			yaml: "    public_url: https://hooks.example.com/webhooks/square\n    api_url: %s\n    api_key: sq_test\n    api_version: \"2025-10-16\"\n",
			auth: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer sq_test" && r.Header.Get("Square-Version") == "2025-10-16"
			},
			objects: map[string]string{
				"/v2/payments/KkAkhdMsgzn59SM8A89WgKwekxLZY":                                            `{"payment":{"id":"KkAkhdMsgzn59SM8A89WgKwekxLZY","status":"COMPLETED","created_at":"2019-07-10T13:39:55.317Z","updated_at":"2019-07-10T13:40:05.982Z"}}`,
				"/v2/orders/CAISENgvlJ6jLWAzERDzjyHVybY":                                                `{"order":{"id":"CAISENgvlJ6jLWAzERDzjyHVybY","state":"OPEN","version":3,"updated_at":"2020-01-17T20:47:53.293Z"}}`,
				"/v2/refunds/bP9mAsEMYPUGjjGNaNO5ZDVyLhSZY_69MmgHubkLqx9wGhnmenRUHOaKitE6llfZuxcWYjGxd": `{"refund":{"id":"bP9mAsEMYPUGjjGNaNO5ZDVyLhSZY_69MmgHubkLqx9wGhnmenRUHOaKitE6llfZuxcWYjGxd","status":"COMPLETED","updated_at":"2021-10-13T20:00:03.497Z"}}`,
			},
			sends: []delivery{
				{id: "sq-pay", body: `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"sq-pay","created_at":"2019-07-10T13:40:06Z","data":{"type":"payment","id":"KkAkhdMsgzn59SM8A89WgKwekxLZY"}}`},
				{id: "sq-order", body: `{"merchant_id":"6SSW7HV8K2ST5","type":"order.updated","event_id":"sq-order","created_at":"2020-01-17T20:47:54Z","data":{"type":"order_updated","id":"CAISENgvlJ6jLWAzERDzjyHVybY"}}`},
				{id: "sq-refund", body: `{"merchant_id":"6SSW7HV8K2ST5","type":"refund.updated","event_id":"sq-refund","created_at":"2021-10-13T20:00:04Z","data":{"type":"refund","id":"bP9mAsEMYPUGjjGNaNO5ZDVyLhSZY_69MmgHubkLqx9wGhnmenRUHOaKitE6llfZuxcWYjGxd"}}`},
				{id: "sq-moved", body: `{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated","event_id":"sq-moved","created_at":"2019-07-10T13:40:06Z","data":{"type":"payment","id":"moved"}}`},
			},
			want: map[string]wantObject{
				"KkAkhdMsgzn59SM8A89WgKwekxLZY": {"payment", "2019-07-10T13:40:05.982Z", `"status": "COMPLETED"`},
				"CAISENgvlJ6jLWAzERDzjyHVybY":   {"order", "3", `"state": "OPEN"`},
				"bP9mAsEMYPUGjjGNaNO5ZDVyLhSZY_69MmgHubkLqx9wGhnmenRUHOaKitE6llfZuxcWYjGxd": {"refund", "2021-10-13T20:00:03.497Z", `"status": "COMPLETED"`},
			},
			dead: 1,
		},
		"paddle": {
			yaml: "    api_url: %s\n    api_key: pdl_test\n    api_version: \"1\"\n",
			auth: func(r *http.Request) bool {
				return r.Header.Get("Authorization") == "Bearer pdl_test" && r.Header.Get("Paddle-Version") == "1"
			},
			objects: map[string]string{
				"/transactions/txn_01hv8wptq8987qeep44cyrewp9":  `{"data":{"id":"txn_01hv8wptq8987qeep44cyrewp9","status":"completed","created_at":"2024-04-12T10:12:33.2014Z","updated_at":"2024-04-12T10:18:49.738972Z"},"meta":{"request_id":"3d0ae4ad-1a5a-4e2b-a7c8-0e9fc6f1e1a7"}}`,
				"/subscriptions/sub_01hv8y5ehszzq0yv20ttx3166y": `{"data":{"id":"sub_01hv8y5ehszzq0yv20ttx3166y","status":"active","updated_at":"2024-04-12T10:38:00.761Z"},"meta":{"request_id":"9c8d2e0a-3f65-4f04-a4c5-1d5b7b0a5d14"}}`,
			},
			sends: []delivery{
				{id: "evt_txn", body: `{"event_id":"evt_txn","event_type":"transaction.completed","occurred_at":"2024-04-12T10:18:50Z","notification_id":"ntf_1","data":{"id":"txn_01hv8wptq8987qeep44cyrewp9","status":"paid"}}`},
				{id: "evt_sub", body: `{"event_id":"evt_sub","event_type":"subscription.updated","occurred_at":"2024-04-12T10:38:01Z","notification_id":"ntf_2","data":{"id":"sub_01hv8y5ehszzq0yv20ttx3166y"}}`},
				{id: "evt_gone", body: `{"event_id":"evt_gone","event_type":"transaction.updated","occurred_at":"2024-04-12T10:38:01Z","notification_id":"ntf_3","data":{"id":"txn_missing"}}`},
			},
			want: map[string]wantObject{
				"txn_01hv8wptq8987qeep44cyrewp9": {"transaction", "2024-04-12T10:18:49.738972Z", `"status": "completed"`},
				"sub_01hv8y5ehszzq0yv20ttx3166y": {"subscription", "2024-04-12T10:38:00.761Z", `"status": "active"`},
			},
			dead: 1,
		},
		"hubspot": {
			yaml: "    public_url: https://hooks.example.com/webhooks/hubspot\n    api_url: %s\n    api_key: pat-test\n",
			auth: bearer("pat-test"),
			objects: map[string]string{
				"/crm/v3/objects/contacts/512": `{"id":"512","properties":{"email":"bcooper@biglytics.net","firstname":"Bryan"},"createdAt":"2019-10-30T03:30:17.883Z","updatedAt":"2019-12-07T16:50:06.678Z","archived":false}`,
				"/crm/v3/objects/deals/512":    `{"id":"512","properties":{"dealname":"Custom data integrations","amount":"1500.00"},"createdAt":"2019-10-30T03:30:17.883Z","updatedAt":"2019-12-07T16:50:06.678Z","archived":false}`,
			},
			sends: []delivery{
				{id: "hs-batch", body: `[{"eventId":100,"subscriptionId":7,"portalId":62515,"occurredAt":1575737406678,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":512,"propertyName":"email","propertyValue":"old@example.com"},` +
					`{"eventId":101,"subscriptionId":8,"portalId":62515,"occurredAt":1575737406678,"subscriptionType":"deal.creation","attemptNumber":0,"objectId":512},` +
					`{"eventId":102,"subscriptionId":7,"portalId":62515,"occurredAt":1575737406678,"subscriptionType":"contact.deletion","attemptNumber":0,"objectId":9999}]`},
			},
			want: map[string]wantObject{
				"contact/512": {"contact", "2019-12-07T16:50:06.678Z", `bcooper@biglytics.net`},
				"deal/512":    {"deal", "2019-12-07T16:50:06.678Z", `Custom data integrations`},
			},
			dead: 1,
		},
	}
}

package envelope

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

func TestLookupPath(t *testing.T) {
	body := []byte(`{"id":"e","data":{"object":{"id":"pi_1","n":42,"empty":"","nested":{"x":"y"},"dup":"first","dup":"last"},"list":[1]}}`)
	cases := map[string]struct {
		want string
		ok   bool
	}{
		"id":                    {"e", true},
		"data.object.id":        {"pi_1", true},
		"data.object.n":         {"42", true},
		"data.object.empty":     {"", false},
		"data.object.nested":    {"", false},
		"data.object.nested.x":  {"y", true},
		"data.object.dup":       {"last", true}, // as jsonb stores it
		"data.list.0":           {"1", true},    // arrays are indexed (batch bodies)
		"data.list.1":           {"", false},
		"data.list.01":          {"", false},
		"data.list.x":           {"", false},
		"data.missing":          {"", false},
		"nope":                  {"", false},
		"data.object.id.deeper": {"", false},
	}
	for path, c := range cases {
		got, ok := schemas.LookupPathJSON(body, path)
		if got != c.want || ok != c.ok {
			t.Errorf("lookupPath(%q) = %q, %v; want %q, %v", path, got, ok, c.want, c.ok)
		}
	}
	if _, ok := schemas.LookupPathJSON([]byte(`{"id":`), "id"); ok {
		t.Error("invalid JSON: found a value")
	}
}

func TestParseDeliveryRefusesWhatJSONBCannotHold(t *testing.T) {
	now := time.Now()
	for body, want := range map[string]string{
		`{"id":"a","type":"t"`: "not valid JSON",
		`["id","type"]`:        "not a JSON object",
		"{\"id\":\"a\",\"type\":\"t\",\"x\":\"\xff\"}": "not valid UTF-8",
		`{"id":"a","type":"t","x":"\u0000"}`:           "\\u0000",
		`{"id":"a","type":"t","x":"a\\\u0000"}`:        "\\u0000",
		`{"id":"a","type":"t","id":"b"}`:               "", // the last id counts
		`{"id":"a","type":"t","x":"\\u0000"}`:          "", // an escaped backslash, then text
		`{"id":"a","type":"t","x":"\\\\u0000"}`:        "",
	} {
		p, err := parseDelivery(mustKind("reference"), http.Header{}, []byte(body), signature.Result{}, now)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", body, err)
		case want != "" && (!errors.Is(err, errBadEnvelope) || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want one saying %q", body, err, want)
		case want == "" && body == `{"id":"a","type":"t","id":"b"}` && p.ID != "b":
			t.Errorf("%s: id %q, want the last one", body, p.ID)
		}
	}
}

func TestParseDeliveryCreatedAt(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for body, want := range map[string]string{
		`{"id":"a","type":"t","created_at":"2026-11-01T10:00:00Z"}`: "2026-11-01T10:00:00Z",
		`{"id":"a","type":"t","created":1762000000}`:                "2025-11-01T12:26:40Z",
		`{"id":"a","type":"t","timestamp":"2026-01-02T03:04:05Z"}`:  "2026-01-02T03:04:05Z",
		`{"id":"a","type":"t","created_at":"yesterday"}`:            "",
	} {
		p, err := parseDelivery(mustKind("reference"), http.Header{}, []byte(body), signature.Result{}, now)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if p.CreatedAt != nil {
			got = p.CreatedAt.Format(time.RFC3339)
		}
		if got != want {
			t.Errorf("%s: created_at = %q, want %q", body, got, want)
		}
	}
	if _, err := parseDelivery(mustKind("reference"), http.Header{}, []byte(`{"id":7,"type":"t"}`), signature.Result{}, now); !errors.Is(err, errBadEnvelope) {
		t.Fatalf("numeric id: %v", err)
	}
}

func FuzzParseDelivery(f *testing.F) {
	f.Add("reference", []byte(`{"id":"a","type":"t","data":{"payment_id":"p"}}`))
	f.Add("github", []byte(`{"action":"opened"}`))
	f.Add("slack", []byte(`{"event_id":"E","event":{"type":"x"},"event_time":1}`))
	f.Add("shopify", []byte(`{"id":1}`))
	f.Add("twilio", []byte(`MessageSid=SM1&MessageStatus=delivered&To=%2B1&To=%2B2`))
	f.Add("sendgrid", []byte(`[{"event":"delivered","timestamp":1513299569,"sg_message_id":"m1"},{"sg_event_id":"e2","event":"open"}]`))
	f.Add("hubspot", []byte(`[{"eventId":1,"subscriptionId":2,"subscriptionType":"contact.creation"}]`))
	f.Add("mailgun", []byte(`{"event-data":{"id":"e1","event":"delivered","timestamp":1521472262.908181}}`))
	f.Fuzz(func(t *testing.T, scheme string, body []byte) {
		h := http.Header{"X-Github-Event": {"push"}, "X-Shopify-Topic": {"orders/create"}}
		evs, err := Parse(mustKind(scheme), h, body, signature.Result{EventID: "hdr-id"}, time.Unix(0, 0))
		if err != nil {
			if !errors.Is(err, errBadEnvelope) {
				t.Fatalf("error without errBadEnvelope: %v", err)
			}
			return
		}
		for _, p := range evs {
			if p.ID == "" || p.Type == "" || !json.Valid(p.Payload) {
				t.Fatalf("accepted delivery without id/type or with invalid payload: %+v", p)
			}
		}
	})
}

// mustKind is the catalogue entry of scheme (the zero Kind when unknown).
func mustKind(scheme string) providers.Kind {
	k, _ := providers.Lookup(scheme)
	return k
}

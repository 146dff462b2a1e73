package ingest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/wiring"
)

// Signed handshakes are answered after verification, never stored, and an
// unsigned one is refused like any forged delivery.
func TestSignedHandshakes(t *testing.T) {
	h := newCatalogHarness(t)
	t.Run("zoom endpoint.url_validation", func(t *testing.T) {
		body := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
		r := h.deliver(t, "zoom", h.signed(t, "zoom", catalogSecret, []byte(body), nil, ""))
		expectStatus(t, r, http.StatusOK)
		var got map[string]string
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatal(err)
		}
		if got["plainToken"] != "qgg8vlvZRS6UYooatFL8Aw" || got["encryptedToken"] != hmacHex(catalogSecret, "qgg8vlvZRS6UYooatFL8Aw") {
			t.Fatalf("answer %v", got)
		}
		unsigned := delivery{header: http.Header{}, body: []byte(body)}
		expectStatus(t, h.deliver(t, "zoom", unsigned), http.StatusBadRequest)
	})
	t.Run("twitch webhook_callback_verification", func(t *testing.T) {
		body := `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387","type":"channel.follow"}}`
		d := h.signed(t, "twitch", catalogSecret, []byte(body), map[string]string{"Twitch-Eventsub-Message-Type": "webhook_callback_verification"}, "e76c6bd4-55c9-4987-8304-da1588d8988b")
		r := h.deliver(t, "twitch", d)
		expectStatus(t, r, http.StatusOK)
		if r.body != "pogchamp-kappa-360noscope-vohiyo" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("answer %q %q", r.body, r.header.Get("Content-Type"))
		}
		d.header.Set("Twitch-Eventsub-Message-Signature", "sha256="+strings.Repeat("0", 64))
		expectStatus(t, h.deliver(t, "twitch", d), http.StatusBadRequest)
	})
	t.Run("discord PING", func(t *testing.T) {
		r := h.deliver(t, "discord", h.signed(t, "discord", discordSeed, []byte(`{"id":"1","application_id":"2","type":1,"version":1}`), nil, ""))
		expectStatus(t, r, http.StatusOK)
		if strings.TrimSpace(r.body) != `{"type":1}` {
			t.Fatalf("answer %q", r.body)
		}
		expectStatus(t, h.deliver(t, "discord", h.signed(t, "discord", discordSeed, []byte(`{"version":1,"application_id":"2","type":0}`), nil, "")), http.StatusNoContent)
		expectStatus(t, h.deliver(t, "discord", h.signed(t, "discord", otherKey(t, "discord"), []byte(`{"type":1}`), nil, "")), http.StatusBadRequest)
	})
	if n := h.count("inbox", ""); n != 0 {
		t.Fatalf("handshakes stored %d rows", n)
	}
	// An interaction is stored first, then deferred: the consumer answers it.
	t.Run("discord interactions deferred after the commit", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"id":"1200000000000000001","application_id":"2","type":2,"token":"tok","data":{"name":"ping"}}`:   `{"type":5}`,
			`{"id":"1200000000000000002","application_id":"2","type":3,"token":"tok","data":{"custom_id":"b"}}`: `{"type":6}`,
		} {
			r := h.deliver(t, "discord", h.signed(t, "discord", discordSeed, []byte(body), nil, ""))
			expectStatus(t, r, http.StatusOK)
			if strings.TrimSpace(r.body) != want {
				t.Fatalf("answer %q, want %q", r.body, want)
			}
		}
		if n := h.count("inbox", "provider = 'discord'"); n != 2 {
			t.Fatalf("interactions stored: %d rows", n)
		}
	})
}

// Meta and Dropbox check an endpoint with a GET; every other provider
// answers GET with 405. Meta's example is the one of its documentation
// (developers.facebook.com/docs/graph-api/webhooks/getting-started).
func TestGetHandshakes(t *testing.T) {
	h := newCatalogHarness(t)
	get := func(provider, query string) response {
		return h.do(http.MethodGet, "/webhooks/"+provider+"?"+query, nil, nil, 0)
	}
	r := get("meta", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+metaToken)
	expectStatus(t, r, http.StatusOK)
	if r.body != "1158201444" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("meta answer %q %v", r.body, r.header)
	}
	expectStatus(t, get("meta", "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=wrong"), http.StatusForbidden)
	expectStatus(t, get("meta", "hub.mode=subscribe&hub.verify_token="+metaToken), http.StatusBadRequest)
	expectStatus(t, get("meta", ""), http.StatusBadRequest)

	markup := "<script>alert(1)</script>"
	r = get("dropbox", "challenge="+url.QueryEscape(markup))
	expectStatus(t, r, http.StatusOK)
	if r.body != markup || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("dropbox answer %q %v", r.body, r.header)
	}
	expectStatus(t, get("dropbox", ""), http.StatusBadRequest)

	r = get("paddle", "challenge=x")
	expectStatus(t, r, http.StatusMethodNotAllowed)
	if r.header.Get("Allow") != "POST" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	r = h.do(http.MethodPut, "/webhooks/meta", nil, bytes.NewReader(nil), 0)
	expectStatus(t, r, http.StatusMethodNotAllowed)
	if r.header.Get("Allow") != "GET, POST" {
		t.Fatalf("Allow %q", r.header.Get("Allow"))
	}
	// A POST to meta still needs its signature.
	expectStatus(t, h.deliver(t, "meta", delivery{header: http.Header{}, body: []byte(`{"object":"page"}`)}), http.StatusBadRequest)
	if strings.Contains(h.logs.String(), metaToken) {
		t.Fatal("the logs contain the verify token")
	}
}

// A URL-signed provider verifies against its configured public_url: a
// signature made for another URL is refused, whatever Host the request
// carries, and the test server's own address (which differs from
// public_url) is never what is checked.
func TestURLSignedProvidersUsePublicURL(t *testing.T) {
	h := newCatalogHarness(t)
	for _, provider := range []string{"twilio", "square", "hubspot"} {
		t.Run(provider, func(t *testing.T) {
			body := []byte(`{"type":"x","event_id":"e-` + provider + `"}`)
			if provider == "hubspot" {
				body = []byte(`[{"eventId":7,"subscriptionId":8,"subscriptionType":"contact.creation","objectId":1}]`)
			}
			cfg := wiring.Provider(h.cat.Providers[provider]).Signature
			cfg.PublicURL = "https://attacker.example.net/webhooks/" + provider
			r := &signature.Request{Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
			if err := signature.SignRequest(cfg, []byte(catalogSecret), r, h.now, ""); err != nil {
				t.Fatal(err)
			}
			d := delivery{query: r.RawQuery, header: r.Header, body: r.Body}
			d.header.Set("Host", "attacker.example.net")
			d.header.Set("X-Forwarded-Host", "attacker.example.net")
			resp := h.deliver(t, provider, d)
			expectStatus(t, resp, http.StatusBadRequest)
			if strings.TrimSpace(resp.body) != ingest.VerificationFailed {
				t.Fatalf("body %q", resp.body)
			}
			expectStatus(t, h.deliver(t, provider, h.signed(t, provider, catalogSecret, body, nil, "")), http.StatusNoContent)
		})
	}
}

package ingest_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/ingest"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/schemas/providers"
	"github.com/gatehouse/gatehouse/wiring"
)

// The RFC 8032 section 7.1 TEST 1 key pair stands in for a Discord
// application's key.
const (
	discordSeed   = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	discordPublic = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	catalogSecret = "catalog-test-secret-4b1d9e"
	metaToken     = "meatyhamhock"
	publicBase    = "https://hooks.example.com/webhooks/"
)

// catalog is a configuration with one provider of every catalogue kind
// that is not configured in testConfig, each signing with catalogSecret
// (discord and sendgrid with their public keys). It returns the signing
// secret of each provider.
func catalog(t *testing.T) (*config.Config, map[string]string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	var y strings.Builder
	y.WriteString("providers:\n")
	sign := map[string]string{}
	for _, name := range providers.Names() {
		if name == "reference" || name == "hmac" {
			continue
		}
		verify, signWith := catalogSecret, catalogSecret
		switch name {
		case "discord":
			verify, signWith = discordPublic, discordSeed
		case "sendgrid":
			verify, signWith = base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(priv)
		case "postmark":
			verify, signWith = "hooks:"+catalogSecret, "hooks:"+catalogSecret
		case "standard-webhooks", "clerk", "resend":
			verify, signWith = svixSecret, svixSecret
		}
		sign[name] = signWith
		fmt.Fprintf(&y, "  %s:\n    scheme: %s\n    secrets: [{id: s1, value: %q}]\n", name, name, verify)
		if catalogKind(name).SignsURL {
			fmt.Fprintf(&y, "    public_url: %s%s\n", publicBase, name)
		}
		if name == "meta" {
			fmt.Fprintf(&y, "    verify_token: %s\n", metaToken)
		}
	}
	cfg, err := config.Parse([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	return cfg, sign
}

// catalogHarness is a receiver serving every catalogue provider.
type catalogHarness struct {
	*harness
	cat  *config.Config
	sign map[string]string
}

func newCatalogHarness(t *testing.T) *catalogHarness {
	cat, sign := catalog(t)
	h := newHarness(t, func(c *ingest.Config) {
		c.Providers = wiring.Providers(cat)
		c.ReservedUnverifiedBytes = cat.Ingest.ReservedUnverifiedBytes // the reserve for 26 providers, not testConfig's 7
	})
	return &catalogHarness{harness: h, cat: cat, sign: sign}
}

// delivery is one request as a provider sends it.
type delivery struct {
	query, contentType string
	header             http.Header
	body               []byte
}

// signed signs body as provider with secret; extra headers are the
// provider's own (event type, delivery id).
func (h *catalogHarness) signed(t *testing.T, provider, secret string, body []byte, extra map[string]string, eventID string) delivery {
	t.Helper()
	r := &signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
	ct := "application/json"
	if bytes.Contains(body, []byte("=")) && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) && !bytes.HasPrefix(body, []byte("[")) {
		ct = "application/x-www-form-urlencoded"
	}
	r.Header.Set("Content-Type", ct)
	for k, v := range extra {
		r.Header.Set(k, v)
	}
	if err := signature.SignRequest(wiring.Provider(h.cat.Providers[provider]).Signature, []byte(secret), r, h.now, eventID); err != nil {
		t.Fatal(err)
	}
	return delivery{query: r.RawQuery, contentType: ct, header: r.Header, body: r.Body}
}

func (h *catalogHarness) deliver(t *testing.T, provider string, d delivery) response {
	t.Helper()
	path := "/webhooks/" + provider
	if d.query != "" {
		path += "?" + d.query
	}
	return h.do(http.MethodPost, path, d.header, bytes.NewReader(d.body), int64(len(d.body)))
}

func ms(h *harness) string { return strconv.FormatInt(h.now.UnixMilli(), 10) }

// Every provider of the catalogue: a genuine delivery is stored once with
// the id, type and key its kind says; a redelivery is a duplicate; a
// delivery signed with another secret, or whose body changed after
// signing, is refused with 400 and stores nothing.
func TestCatalogProvidersStoreOnceAndRefuseForgeries(t *testing.T) {
	h := newCatalogHarness(t)
	cases := []struct {
		provider, body, eventID string
		headers                 map[string]string
		wantID, wantType        string
		wantAggregate           string
		bodyUnsigned            bool // gitlab, postmark, mailgun: the provider does not sign the event data
	}{
		{provider: "clerk", body: `{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user"},"object":"event","type":"user.created","timestamp":1654012591835}`,
			eventID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", wantID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", wantType: "user.created", wantAggregate: "user_29w83sxmDNGwOuEthce5gg56FcC"},
		{provider: "resend", body: `{"type":"email.sent","created_at":"2023-02-22T23:41:12.126Z","data":{"email_id":"56761188-7520-42d8-8898-ff6fc54ce618"}}`,
			eventID: "msg_resend1", wantID: "msg_resend1", wantType: "email.sent", wantAggregate: "56761188-7520-42d8-8898-ff6fc54ce618"},
		{provider: "gitlab", body: `{"object_kind":"merge_request","project":{"path_with_namespace":"group/app"},"object_attributes":{"action":"open"}}`,
			headers: map[string]string{"Idempotency-Key": "f6e0c1a2-3b4d-4e5f-8a9b-0c1d2e3f4a5b", "X-Gitlab-Event": "Merge Request Hook"},
			wantID:  "f6e0c1a2-3b4d-4e5f-8a9b-0c1d2e3f4a5b", wantType: "merge_request.open", wantAggregate: "group/app", bodyUnsigned: true},
		{provider: "bitbucket", body: `{"repository":{"full_name":"team/repo"},"push":{"changes":[]}}`,
			headers: map[string]string{"X-Request-UUID": "afe3b6c4-4e2a-4ae1-9a4b-bb2c4b1d0c7e", "X-Event-Key": "repo:push"},
			wantID:  "afe3b6c4-4e2a-4ae1-9a4b-bb2c4b1d0c7e", wantType: "repo:push", wantAggregate: "team/repo"},
		{provider: "discord", body: `{"version":1,"application_id":"1234","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834","data":{"user":{"id":"1"}}}}`,
			wantType: "event.APPLICATION_AUTHORIZED"},
		{provider: "twilio", body: `MessageSid=SM1234&MessageStatus=delivered&AccountSid=AC1&To=%2B15558675310`,
			headers: map[string]string{"I-Twilio-Idempotency-Token": "idem-7c4b"}, wantID: "idem-7c4b", wantType: "message.delivered", wantAggregate: "SM1234"},
		{provider: "sendgrid", body: `[{"email":"a@example.com","timestamp":1513299569,"event":"delivered","sg_event_id":"ZGVsaXZl","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"}]`,
			wantID: "ZGVsaXZl", wantType: "delivered", wantAggregate: "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"},
		{provider: "mailgun", body: `{"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered","timestamp":1521472262.908181,"message":{"headers":{"message-id":"20180319.1@example.com"}}}}`,
			wantID: "CPgfbmQMTCKtHW6uIWtuVe", wantType: "delivered", wantAggregate: "20180319.1@example.com", bodyUnsigned: true},
		{provider: "postmark", body: `{"RecordType":"Delivery","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","DeliveredAt":"2026-11-01T10:00:00Z"}`,
			wantType: "Delivery", wantAggregate: "883953f4-6105-42a2-a16a-77a8eac79483", bodyUnsigned: true},
		{provider: "square", body: `{"merchant_id":"M1","type":"payment.updated","event_id":"6a8f5f28-54a1-4eb0-a98a-3111513fd4fc","created_at":"2026-11-01T10:00:00Z","data":{"type":"payment","id":"KkAkhdMs","object":{}}}`,
			wantID: "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc", wantType: "payment.updated", wantAggregate: "KkAkhdMs"},
		{provider: "paddle", body: `{"event_id":"evt_01h8bx","event_type":"transaction.completed","occurred_at":"2026-11-01T10:00:00Z","data":{"id":"txn_01h8"}}`,
			wantID: "evt_01h8bx", wantType: "transaction.completed", wantAggregate: "txn_01h8"},
		{provider: "lemonsqueezy", body: `{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1","attributes":{"created_at":"2026-11-01T10:00:00Z"}}}`,
			wantType: "order_created", wantAggregate: "1"},
		{provider: "zoom", body: `{"event":"meeting.started","event_ts":1762000000000,"payload":{"account_id":"a","object":{"id":"85011","uuid":"u"}}}`,
			wantType: "meeting.started", wantAggregate: "85011"},
		{provider: "twitch", body: `{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","type":"channel.follow"},"event":{"user_id":"1"}}`,
			headers: map[string]string{"Twitch-Eventsub-Message-Type": "notification", "Twitch-Eventsub-Subscription-Type": "channel.follow"},
			eventID: "befa7b53-d79d-478f-86b9-120f112b044e", wantID: "befa7b53-d79d-478f-86b9-120f112b044e", wantType: "channel.follow.notification",
			wantAggregate: "f1c2a387-161a-49f9-a165-0f21d7a4e1c4"},
		{provider: "meta", body: `{"object":"whatsapp_business_account","entry":[{"id":"WABA1","changes":[{"value":{},"field":"messages"}]}]}`,
			wantType: "whatsapp_business_account.messages", wantAggregate: "WABA1"},
		{provider: "dropbox", body: `{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},"delta":{"users":[12345678]}}`,
			wantType: "list_folder"},
		{provider: "linear", body: `{"action":"create","type":"Issue","createdAt":"2026-11-01T10:00:00.000Z","data":{"id":"iss-1"},"webhookTimestamp":` + ms(h.harness) + `}`,
			headers: map[string]string{"Linear-Delivery": "234d1a4e-b617-4388-90fe-adc3633d6b72"}, wantID: "234d1a4e-b617-4388-90fe-adc3633d6b72", wantType: "Issue.create", wantAggregate: "iss-1"},
		{provider: "intercom", body: `{"type":"notification_event","topic":"conversation.user.created","id":"notif_ccd8a4d2","created_at":1762000000,"data":{"item":{"id":"conv1"}}}`,
			wantID: "notif_ccd8a4d2", wantType: "conversation.user.created", wantAggregate: "conv1"},
		{provider: "hubspot", body: `[{"eventId":1,"subscriptionId":123456,"portalId":9,"subscriptionType":"contact.creation","objectId":123,"occurredAt":1762000000000,"attemptNumber":0}]`,
			wantID: "123456.1", wantType: "contact.creation", wantAggregate: "123"},
		{provider: "typeform", body: `{"event_id":"01GRC8GF6CBVWYJW0CHQ7ZSXEQ","event_type":"form_response","form_response":{"form_id":"lT4Z3j","submitted_at":"2026-11-01T10:00:00Z"}}`,
			wantID: "01GRC8GF6CBVWYJW0CHQ7ZSXEQ", wantType: "form_response", wantAggregate: "lT4Z3j"},
		{provider: "calendly", body: `{"created_at":"2026-11-01T10:00:00.000000Z","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/E1/invitees/I1"}}`,
			wantType: "invitee.created", wantAggregate: "https://api.calendly.com/scheduled_events/E1/invitees/I1"},
	}
	covered := map[string]bool{"reference": true, "hmac": true, "stripe": true, "github": true, "slack": true, "standard-webhooks": true, "shopify": true}
	for _, c := range cases {
		covered[c.provider] = true
		t.Run(c.provider, func(t *testing.T) {
			good := h.signed(t, c.provider, h.sign[c.provider], []byte(c.body), c.headers, c.eventID)
			wantID := c.wantID
			if wantID == "" { // a provider without event ids: the body's digest
				d := sha256.Sum256([]byte(c.body))
				wantID = "sha256:" + hex.EncodeToString(d[:])
			}
			expectStatus(t, h.deliver(t, c.provider, good), http.StatusNoContent)
			var typ, agg string
			err := h.pool.QueryRow(context.Background(),
				`SELECT i.event_type, o.aggregateid FROM inbox i JOIN outbox o ON o.aggregatetype = i.provider AND o.event_id = i.event_id
				 WHERE i.provider = $1 AND i.event_id = $2`, c.provider, wantID).Scan(&typ, &agg)
			if err != nil {
				t.Fatalf("stored row %q: %v", wantID, err)
			}
			if typ != c.wantType || (c.wantAggregate != "" && agg != c.wantAggregate) {
				t.Fatalf("type=%q aggregate=%q, want %q %q", typ, agg, c.wantType, c.wantAggregate)
			}
			expectStatus(t, h.deliver(t, c.provider, good), http.StatusNoContent) // a redelivery
			forged := h.signed(t, c.provider, otherKey(t, c.provider), []byte(c.body), c.headers, c.eventID)
			r := h.deliver(t, c.provider, forged)
			expectStatus(t, r, http.StatusBadRequest)
			if strings.TrimSpace(r.body) != ingest.VerificationFailed {
				t.Fatalf("forged: body %q", r.body)
			}
			if h.metric("gatehouse_webhook_verification_failures_total", "provider="+c.provider, "reason=bad_signature") != 1 {
				t.Fatal("the forged delivery is not counted as bad_signature")
			}
			if !strings.Contains(h.logs.String(), `"provider":"`+c.provider+`"`) || !strings.Contains(h.logs.String(), `"reason":"bad_signature"`) {
				t.Fatal("the forged delivery's log line lacks its reason")
			}
			changed := good
			changed.body = bytes.Replace(good.body, []byte(`"`), []byte(` "`), 1)
			if c.provider == "twilio" {
				changed.body = bytes.Replace(good.body, []byte("delivered"), []byte("failed"), 1)
			}
			if c.bodyUnsigned {
				t.Logf("%s does not sign the event data: TLS is what protects it", c.provider)
			} else {
				expectStatus(t, h.deliver(t, c.provider, changed), http.StatusBadRequest)
			}
			if n := h.count("inbox", "provider = $1", c.provider); n != 1 {
				t.Fatalf("inbox rows = %d, want 1", n)
			}
		})
	}
	for _, name := range providers.Names() {
		if !covered[name] {
			t.Errorf("catalogue kind %q has no case here", name)
		}
	}
	for _, s := range []string{catalogSecret, discordSeed, metaToken} {
		if strings.Contains(h.logs.String(), s) {
			t.Errorf("the logs contain a secret")
		}
	}
}

// otherKey is a well-formed signing key of provider that is not configured.
func otherKey(t *testing.T, provider string) string {
	switch provider {
	case "discord":
		return strings.Repeat("11", 32)
	case "standard-webhooks", "clerk", "resend":
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key of 24 bytes!"))
	case "postmark":
		return "hooks:another-password"
	case "sendgrid":
	default:
		return "another-" + catalogSecret
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := x509.MarshalPKCS8PrivateKey(k)
	return base64.StdEncoding.EncodeToString(b)
}

func hmacHex(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// catalogKind is the catalogue entry of scheme.
func catalogKind(scheme string) providers.Kind {
	k, _ := providers.Lookup(scheme)
	return k
}

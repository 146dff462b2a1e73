package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
	"github.com/gatehouse/gatehouse/wiring"
)

// printedKeys runs `gatehouse providers` and returns, per scheme, the
// paths its "kafka key:" line names (nil: the event id only).
func printedKeys(t *testing.T) map[string][]string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"providers"}, func(string) string { return "" }, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	scheme := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, " ") {
			scheme = line
			continue
		}
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "kafka key:")
		if !ok {
			continue
		}
		if _, dup := keys[scheme]; dup {
			t.Fatalf("%s: two kafka key lines", scheme)
		}
		keys[scheme] = nil
		for _, part := range strings.Split(strings.TrimSpace(v), ", else ") {
			if !strings.HasPrefix(part, "the event id") && !strings.HasPrefix(part, "its aggregate_id_path") {
				keys[scheme] = append(keys[scheme], part)
			}
		}
	}
	return keys
}

// keyCase is one genuine delivery of a catalogue provider.
type keyCase struct {
	body, eventID string
	headers       map[string]string
}

// keyCases are realistic deliveries (the shapes of the providers' documented
// examples) of every catalogue kind; each holds the object its kind's
// default key path points at, where the kind has one.
func keyCases(nowMS string) map[string]keyCase {
	return map[string]keyCase{
		"stripe":            {body: `{"id":"evt_key_stripe","object":"event","created":1762000000,"type":"payment_intent.succeeded","data":{"object":{"id":"pi_key","object":"payment_intent"}}}`},
		"github":            {body: `{"action":"opened","repository":{"full_name":"octo/key"},"pull_request":{"id":7}}`, eventID: "1:0f7a1b9e-key", headers: map[string]string{"X-GitHub-Event": "pull_request"}},
		"slack":             {body: `{"type":"event_callback","event_id":"EvKey","event_time":1762000000,"event":{"type":"app_mention"}}`},
		"standard-webhooks": {body: `{"type":"customer.created","timestamp":"2026-11-01T10:00:00Z","data":{"customer_id":"cus_key"}}`, eventID: "msg_key_std"},
		"shopify":           {body: `{"id":820982911946154508}`, eventID: "shop-key-1", headers: map[string]string{"X-Shopify-Topic": "orders/create"}},
		"clerk":             {body: `{"data":{"id":"user_key","object":"user"},"object":"event","type":"user.created","timestamp":1654012591835}`, eventID: "msg_key_clerk"},
		"resend":            {body: `{"type":"email.sent","created_at":"2023-02-22T23:41:12.126Z","data":{"email_id":"email-key"}}`, eventID: "msg_key_resend"},
		"gitlab": {body: `{"object_kind":"merge_request","project":{"path_with_namespace":"group/key"},"object_attributes":{"action":"open"}}`,
			headers: map[string]string{"Idempotency-Key": "gl-key-1", "X-Gitlab-Event": "Merge Request Hook"}},
		"bitbucket": {body: `{"repository":{"full_name":"team/key"},"push":{"changes":[]}}`,
			headers: map[string]string{"X-Request-UUID": "bb-key-1", "X-Event-Key": "repo:push"}},
		"discord":      {body: `{"version":1,"application_id":"1234","type":1,"event":{"type":"APPLICATION_AUTHORIZED","data":{"user":{"id":"1"}}}}`},
		"twilio":       {body: `MessageSid=SMkey&MessageStatus=delivered&AccountSid=AC1`, headers: map[string]string{"I-Twilio-Idempotency-Token": "tw-key-1"}},
		"sendgrid":     {body: `[{"email":"a@example.com","timestamp":1513299569,"event":"delivered","sg_event_id":"sg-key-1","sg_message_id":"sgmsg.key"}]`},
		"mailgun":      {body: `{"event-data":{"id":"mg-key-1","event":"delivered","timestamp":1521472262.908181,"message":{"headers":{"message-id":"key@example.com"}}}}`},
		"postmark":     {body: `{"RecordType":"Delivery","MessageID":"pm-key-1","DeliveredAt":"2026-11-01T10:00:00Z"}`},
		"square":       {body: `{"merchant_id":"M1","type":"payment.updated","event_id":"sq-key-1","created_at":"2026-11-01T10:00:00Z","data":{"type":"payment","id":"sqpay-key","object":{}}}`},
		"paddle":       {body: `{"event_id":"pd-key-1","event_type":"transaction.completed","occurred_at":"2026-11-01T10:00:00Z","data":{"id":"txn_key"}}`},
		"lemonsqueezy": {body: `{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"ls-key","attributes":{"created_at":"2026-11-01T10:00:00Z"}}}`},
		"zoom":         {body: `{"event":"meeting.started","event_ts":1762000000000,"payload":{"account_id":"a","object":{"id":"zoom-key","uuid":"u"}}}`},
		"twitch": {body: `{"subscription":{"id":"twitch-sub-key","type":"channel.follow"},"event":{"user_id":"1"}}`, eventID: "tw-msg-key",
			headers: map[string]string{"Twitch-Eventsub-Message-Type": "notification", "Twitch-Eventsub-Subscription-Type": "channel.follow"}},
		"meta":     {body: `{"object":"whatsapp_business_account","entry":[{"id":"WABA-key","time":1762000000,"changes":[{"value":{},"field":"messages"}]}]}`},
		"dropbox":  {body: `{"list_folder":{"accounts":["dbid:key"]},"delta":{"users":[12345678]}}`},
		"linear":   {body: `{"action":"create","type":"Issue","createdAt":"2026-11-01T10:00:00.000Z","data":{"id":"iss-key"},"webhookTimestamp":` + nowMS + `}`, headers: map[string]string{"Linear-Delivery": "lin-key-1"}},
		"intercom": {body: `{"type":"notification_event","topic":"conversation.user.created","id":"ic-key-1","created_at":1762000000,"data":{"item":{"id":"conv-key"}}}`},
		"hubspot":  {body: `[{"eventId":1,"subscriptionId":99,"portalId":9,"subscriptionType":"contact.creation","objectId":4242,"occurredAt":1762000000000,"attemptNumber":0}]`},
		"typeform": {body: `{"event_id":"tf-key-1","event_type":"form_response","form_response":{"form_id":"form-key","submitted_at":"2026-11-01T10:00:00Z"}}`},
		"calendly": {body: `{"created_at":"2026-11-01T10:00:00.000000Z","event":"invitee.created","payload":{"uri":"https://api.calendly.com/scheduled_events/key"}}`},
	}
}

// TestProvidersKafkaKeyIsTheKeyWritten holds `gatehouse providers`' printed
// key paths and the keys actually written together: one genuine, signed
// delivery per catalogue kind goes through the real `serve` binary into
// PostgreSQL, and each outbox row's aggregateid (the Kafka key) must be the
// value at the first printed path that the stored envelope holds — and one
// must hold it, so a printed path that matches nothing fails — or, for a
// kind printed without a path, the event id.
func TestProvidersKafkaKeyIsTheKeyWritten(t *testing.T) {
	printed := printedKeys(t)
	for _, name := range providers.Names() {
		if _, ok := printed[name]; !ok {
			t.Errorf("gatehouse providers prints no kafka key for %s", name)
		}
	}
	entries, signWith := catalogueProviders(t, func(string) string { return "" })
	cases := keyCases(strconv.FormatInt(time.Now().UnixMilli(), 10))
	cfgPath := writeConfigYAML(t, "providers:\n"+entries)
	cfg, err := config.Load(cfgPath, false, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.Postgres(t)
	srv := startServe(t, dbURL, cfgPath)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	for name := range signWith {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			deliverSigned(t, srv.public, cfg.Providers[name], name, signWith[name], contentType(name), c)
			var key, payload, eventID string
			if err := conn.QueryRow(context.Background(), `SELECT aggregateid, payload::text, event_id FROM outbox WHERE aggregatetype = $1`, name).
				Scan(&key, &payload, &eventID); err != nil {
				t.Fatalf("outbox row: %v", err)
			}
			paths := printed[name]
			if len(paths) == 0 {
				if key != eventID {
					t.Errorf("printed key: the event id; written key %q, event id %q", key, eventID)
				}
				return
			}
			for _, p := range paths {
				if v, ok := schemas.LookupPathJSON([]byte(payload), p); ok {
					if v != key {
						t.Errorf("printed key path %s holds %q; written key %q", p, v, key)
					}
					t.Logf("kafka key %q from printed path %s", key, p)
					return
				}
			}
			t.Errorf("none of the printed key paths %v is in the stored envelope %s (written key %q)", paths, payload, key)
		})
	}
}

// TestReadmeKafkaKeyColumn holds the catalogue table of docs/PROVIDERS.md
// (moved there from README.md) to the printed
// key paths: each row's "Kafka key" cell names, in order, every path
// `gatehouse providers` prints for the schemes of that row, and says
// "event id" where a scheme of the row has none.
func TestReadmeKafkaKeyColumn(t *testing.T) {
	b, err := os.ReadFile("../../docs/PROVIDERS.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## The provider catalogue")
	end := -1
	if start >= 0 {
		if n := strings.Index(text[start+1:], "\n## "); n >= 0 { // the section ends at the next one
			end = start + 1 + n
		}
	}
	if start < 0 || end < start {
		t.Fatal("docs/PROVIDERS.md lacks the catalogue section")
	}
	printed := printedKeys(t)
	col := -1
	seen := map[string]bool{}
	for _, line := range strings.Split(text[start:end], "\n") {
		cells := strings.Split(line, "|")
		if strings.HasPrefix(line, "| scheme |") {
			col = slices.IndexFunc(cells, func(c string) bool { return strings.TrimSpace(c) == "Kafka key" })
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		if col < 0 || col >= len(cells) {
			t.Fatalf("docs/PROVIDERS.md's catalogue table has no Kafka key column: %q", line)
		}
		cell := cells[col]
		for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			seen[name] = true
			paths, ok := printed[name]
			if !ok {
				t.Errorf("docs/PROVIDERS.md row %q: %s is not in the catalogue", strings.TrimSpace(cells[1]), name)
				continue
			}
			at := 0
			for _, p := range paths {
				i := strings.Index(cell[at:], "`"+p+"`")
				if i < 0 {
					t.Errorf("docs/PROVIDERS.md's Kafka key for %s is %q; gatehouse providers prints %v", name, strings.TrimSpace(cell), paths)
					break
				}
				at += i + len(p) + 2
			}
			if len(paths) == 0 && !strings.Contains(cell, "event id") {
				t.Errorf("docs/PROVIDERS.md's Kafka key for %s is %q; gatehouse providers prints the event id", name, strings.TrimSpace(cell))
			}
		}
	}
	for _, name := range providers.Names() {
		if name != "hmac" && !seen[name] {
			t.Errorf("docs/PROVIDERS.md's catalogue has no row for %s", name)
		}
	}
}

// catalogueProviders returns the YAML entries (under providers:) of one
// provider of every catalogue kind but reference and hmac, named after the
// kind, each on topic(name) when topic returns one, and the key each signs
// with; every kind must have a delivery in keyCases.
func catalogueProviders(t *testing.T, topic func(name string) string) (string, map[string]string) {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(ec)
	pub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	const (
		secret      = "key-test-secret-6d0c"
		svix        = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		discordSeed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60" // RFC 8032 7.1 TEST 1
		discordPub  = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	)
	var y strings.Builder
	signWith := map[string]string{}
	cases := keyCases("0")
	for _, name := range providers.Names() {
		if name == "reference" || name == "hmac" {
			continue
		}
		if _, ok := cases[name]; !ok {
			t.Errorf("catalogue kind %s has no delivery in keyCases", name)
			continue
		}
		verify, sign := secret, secret
		switch name {
		case "discord":
			verify, sign = discordPub, discordSeed
		case "sendgrid":
			verify, sign = base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(priv)
		case "postmark":
			verify, sign = "hooks:"+secret, "hooks:"+secret
		case "standard-webhooks", "clerk", "resend":
			verify, sign = svix, svix
		}
		signWith[name] = sign
		fmt.Fprintf(&y, "  %s:\n    scheme: %s\n    secrets: [{id: s1, value: %q}]\n", name, name, verify)
		if k, _ := providers.Lookup(name); k.SignsURL {
			fmt.Fprintf(&y, "    public_url: https://hooks.example.com/webhooks/%s\n", name)
		}
		if name == "meta" {
			y.WriteString("    verify_token: key-test-token\n")
		}
		if tp := topic(name); tp != "" {
			fmt.Fprintf(&y, "    topic: %s\n", tp)
		}
	}
	return y.String(), signWith
}

// contentType is the Content-Type a provider posts c with.
func contentType(name string) string {
	if name == "twilio" {
		return "application/x-www-form-urlencoded"
	}
	return "application/json"
}

// deliverSigned signs c as provider p (scheme and key as configured; signWith
// is the signing key) and POSTs it to the receiver at public; anything but a
// 2xx fails the test.
func deliverSigned(t *testing.T, public string, p *config.Provider, name, signWith, contentType string, c keyCase) {
	t.Helper()
	r := &signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(c.body)}
	r.Header.Set("Content-Type", contentType)
	for k, v := range c.headers {
		r.Header.Set(k, v)
	}
	if err := signature.SignRequest(wiring.Provider(p).Signature, []byte(signWith), r, time.Now(), c.eventID); err != nil {
		t.Fatal(err)
	}
	url := public + "/webhooks/" + name
	if r.RawQuery != "" {
		url += "?" + r.RawQuery
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(r.Body))
	req.Header = r.Header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /webhooks/%s: %d", name, resp.StatusCode)
	}
}

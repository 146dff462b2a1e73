package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// sendCase is one catalogue scheme configured as a provider of its name,
// and what send's delivery of it must be recorded as.
type sendCase struct {
	yaml        string // the provider's lines after scheme, indented four spaces
	args        []string
	typ         string // the --type given ("" = send's example)
	wantType    string
	noAggregate bool // the scheme has no aggregate_id_path: the key is the event id
}

// sendCases covers every scheme of the catalogue (the test fails on a
// scheme it does not know).
func sendCases(t *testing.T) map[string]sendCase {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed)
	discordPub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567"))
	lit := func(v string) string { return fmt.Sprintf("    secrets: [{value: %q}]\n", v) }
	url := func(name string) string { return "    public_url: https://hooks.example.com/webhooks/" + name + "\n" }
	return map[string]sendCase{
		"reference": {yaml: lit("whsec_ref") + "    timestamp_header: X-Gatehouse-Timestamp\n    signature_header: X-Gatehouse-Signature\n    aggregate_id_path: [data.payment_id]\n",
			wantType: "payment.succeeded"},
		"hmac": {yaml: lit("hmac-secret") + "    hmac: {header: X-Acme-Signature, content: \"{timestamp}.{body}\", timestamp: {header: X-Acme-Timestamp}}\n" +
			"    event_id: [{path: event.id}]\n    event_type: [{path: event.kind}]\n    aggregate_id_path: [data.order.id]\n",
			typ: "order.shipped", wantType: "order.shipped"},
		"stripe":            {yaml: lit("whsec_stripe_test"), wantType: "payment_intent.succeeded"},
		"github":            {yaml: lit("gh-secret"), wantType: "push"},
		"slack":             {yaml: lit("slack-signing-secret"), wantType: "app_mention", noAggregate: true},
		"standard-webhooks": {yaml: lit(whsec), wantType: "invoice.paid", noAggregate: true},
		"shopify":           {yaml: lit("shpss_secret"), wantType: "orders.create", noAggregate: true},
		"clerk":             {yaml: lit(whsec), wantType: "user.created"},
		"resend":            {yaml: lit(whsec), wantType: "email.sent"},
		"gitlab":            {yaml: lit("gitlab-token"), typ: "merge_request.open", wantType: "merge_request.open"},
		"bitbucket":         {yaml: lit("bb-secret"), wantType: "repo:push"},
		"discord": {yaml: lit(hex.EncodeToString(discordPub)), args: []string{"--signing-key", hex.EncodeToString(seed)},
			wantType: "event.APPLICATION_AUTHORIZED", noAggregate: true},
		"twilio":       {yaml: lit("twilio-auth-token") + url("twilio"), wantType: "message.delivered"},
		"sendgrid":     {yaml: lit(base64.StdEncoding.EncodeToString(ecPub)), args: []string{"--signing-key", base64.StdEncoding.EncodeToString(ecPriv)}, wantType: "delivered"},
		"mailgun":      {yaml: lit("mailgun-signing-key"), wantType: "delivered"},
		"postmark":     {yaml: lit("user:password"), wantType: "Delivery"},
		"square":       {yaml: lit("square-signature-key") + url("square"), wantType: "payment.updated"},
		"paddle":       {yaml: lit("pdl_ntfset_secret"), wantType: "transaction.completed"},
		"lemonsqueezy": {yaml: lit("ls-secret"), wantType: "order_created"},
		"zoom":         {yaml: lit("zoom-secret-token"), wantType: "meeting.started"},
		"twitch":       {yaml: lit("twitch-secret-0123"), wantType: "channel.follow.notification"},
		"meta":         {yaml: lit("meta-app-secret") + "    verify_token: meta-verify\n", wantType: "page.feed"},
		"dropbox":      {yaml: lit("dropbox-app-secret"), wantType: "list_folder", noAggregate: true},
		"linear":       {yaml: lit("linear-secret"), wantType: "Issue.create"},
		"intercom":     {yaml: lit("intercom-client-secret"), wantType: "conversation.user.created"},
		"hubspot":      {yaml: lit("hubspot-client-secret") + url("hubspot"), wantType: "contact.creation"},
		"typeform":     {yaml: lit("typeform-secret"), wantType: "form_response"},
		"calendly":     {yaml: lit("calendly-signing-key"), wantType: "invitee.created"},
	}
}

// Issue 46: `gatehouse send` built the demo's body for every provider
// (github answered 400 missing event type; a Stripe event was keyed by
// its event id). Each scheme's delivery now goes through the real
// receiver and is recorded with the type sent and the --object as its
// Kafka key (the outbox's aggregateid), or the event id for a scheme
// without an aggregate_id_path.
func TestSendEveryProviderThroughTheReceiver(t *testing.T) {
	cases := sendCases(t)
	var cfg strings.Builder
	cfg.WriteString("providers:\n")
	for _, scheme := range providers.Names() {
		c, ok := cases[scheme]
		if !ok {
			t.Fatalf("scheme %s of the catalogue has no send case", scheme)
		}
		fmt.Fprintf(&cfg, "  %s:\n    scheme: %s\n%s", scheme, scheme, c.yaml)
	}
	dbURL := testenv.PostgresUnmigrated(t)
	cfgPath := writeConfigYAML(t, cfg.String())
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	printedID := regexp.MustCompile(`event_id=(\S+)`)
	for _, scheme := range providers.Names() {
		c := cases[scheme]
		t.Run(scheme, func(t *testing.T) {
			object := "obj-" + scheme + "-42"
			args := append([]string{"send", "--config", cfgPath, "--url", srv.public, "--provider", scheme, "--object", object}, c.args...)
			if c.typ != "" {
				args = append(args, "--type", c.typ)
			}
			var out, errOut bytes.Buffer
			if err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err != nil {
				t.Fatalf("send: %v\nstdout: %s\nstderr: %s\nserve: %s", err, out.String(), errOut.String(), srv.stderr)
			}
			m := printedID.FindStringSubmatch(out.String())
			if m == nil || !strings.Contains(out.String(), "204") {
				t.Fatalf("send printed %q", out.String())
			}
			id := m[1]
			var typ, key string
			err := conn.QueryRow(context.Background(), `SELECT i.event_type, o.aggregateid FROM inbox i JOIN outbox o USING (event_id)
				WHERE i.provider = $1 AND i.event_id = $2 AND o.aggregatetype = $1`, scheme, id).Scan(&typ, &key)
			if err != nil {
				t.Fatalf("event %s of %s not recorded: %v (stdout %q)", id, scheme, err, out.String())
			}
			if typ != c.wantType {
				t.Errorf("stored type %q, want %q", typ, c.wantType)
			}
			want := object
			if c.noAggregate {
				want = id
				if !strings.Contains(errOut.String(), "--object is not sent") {
					t.Errorf("no note that --object has no place: %q", errOut.String())
				}
			}
			if key != want {
				t.Errorf("Kafka key (aggregateid) %q, want %q", key, want)
			}
		})
	}
}

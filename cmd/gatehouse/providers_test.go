package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// `gatehouse providers` lists every scheme with its headers, signed
// content, event id source and handshake; --scheme narrows it, and an
// unknown scheme is an error naming the choices.
func TestProvidersListsTheCatalogue(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"providers"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, name := range providers.Names() {
		if !strings.Contains(text, "\n"+name+"\n") && !strings.HasPrefix(text, name+"\n") {
			t.Errorf("scheme %s not listed", name)
		}
	}
	for _, want := range []string{
		"X-Twilio-Signature", "Paddle-Signature part h1=", "{timestamp}:{body}", "Twitch-Eventsub-Message-Timestamp (rfc3339), ±10m0s",
		"endpoint.url_validation", "GET hub.challenge", "signature token accepted once", "the SHA-256 of the signed content", "header Linear-Delivery", "twilio-go v1.23.0", "public_url",
		"kafka key:  data.object.id, else the event id",
		"fetch:      issues.*, issue_comment.* → GET /repos/{data.repository.owner.login}/{data.repository.name}/issues/{data.issue.number} (issue, version updated_at)",
		"https://shopify.dev/docs/api/admin-rest", "X-Shopify-Access-Token: <api_key>", "HTTP basic, api_key = user:password",
		"event-only: SendGrid's Event Webhook is event-only", "api_version in Square-Version", "created at: header X-Shopify-Triggered-At, else the receiver's clock",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("listing lacks %q", want)
		}
	}
	// The rules printed are the ones ingest applies (TypeSource, IDSource:
	// ingest's TestEveryAlternativeOfEveryRule drives every alternative).
	for _, name := range providers.Names() {
		k, _ := providers.Lookup(name)
		if name == "hmac" {
			continue
		}
		for _, want := range []string{"event id:   " + k.IDSource() + "\n", "event type: " + k.TypeSource() + "\n"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: listing lacks %q", name, want)
			}
		}
	}
	if len(providers.Names()) < 27 {
		t.Errorf("%d schemes, want at least 27", len(providers.Names()))
	}
	out.Reset()
	if err := run(context.Background(), []string{"providers", "--scheme", "zoom"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "zoom\n") || strings.Contains(out.String(), "twilio") {
		t.Errorf("--scheme zoom printed %q", out.String())
	}
	err := run(context.Background(), []string{"providers", "--scheme", "paypal"}, func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `"paypal"`) || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("unknown scheme: %v", err)
	}
}

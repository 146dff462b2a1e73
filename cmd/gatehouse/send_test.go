package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/wiring"
)

// send signs a body of the user's (--body) with any catalogue provider's
// scheme, adds the provider's headers (--header) and the query a
// URL-signed scheme needs; the provider's own verifier accepts what
// arrives.
func TestSendBodyAndHeadersForAnyProvider(t *testing.T) {
	cfgPath := writeConfigYAML(t, `providers:
  paddle:
    scheme: paddle
    secrets: [{value: pdl_ntfset_test_secret}]
  twilio:
    scheme: twilio
    public_url: https://hooks.example.com/webhooks/twilio
    secrets: [{value: twilio-auth-token}]
`)
	cfg, err := config.Load(cfgPath, false, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		header http.Header
		err    error
	}
	seen := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/webhooks/")
		v, err := signature.New(wiring.Provider(cfg.Providers[name]).Signature)
		if err != nil {
			t.Error(err)
		}
		body, _ := io.ReadAll(r.Body)
		_, err = v.Verify(&signature.Request{Method: r.Method, RawQuery: r.URL.RawQuery, Header: r.Header, Body: body}, time.Now())
		seen <- got{r.Header, err}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	dir := t.TempDir()
	paddleBody := filepath.Join(dir, "paddle.json")
	if err := os.WriteFile(paddleBody, []byte(`{"event_id":"evt_01h","event_type":"transaction.completed","data":{"id":"txn_1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	twilioBody := filepath.Join(dir, "twilio.form")
	if err := os.WriteFile(twilioBody, []byte("MessageSid=SM1&MessageStatus=delivered"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		provider string
		args     []string
		header   string
		id       string // the event id the receiver records, printed (issue 36: send printed a random one)
	}{
		{"paddle", []string{"--body", paddleBody}, "", "evt_01h"},
		{"twilio", []string{"--body", twilioBody, "--content-type", "application/x-www-form-urlencoded", "--header", "I-Twilio-Idempotency-Token: idem-1"}, "I-Twilio-Idempotency-Token", "idem-1"},
	} {
		t.Run(c.provider, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"send", "--config", cfgPath, "--url", srv.URL, "--provider", c.provider}, c.args...)
			if err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut); err != nil {
				t.Fatalf("send: %v (%s)", err, errOut.String())
			}
			g := <-seen
			if g.err != nil {
				t.Fatalf("the provider's verifier refused what send sent: %v", g.err)
			}
			if c.header != "" && g.header.Get(c.header) == "" {
				t.Fatalf("header %s not sent", c.header)
			}
			if !strings.Contains(out.String(), "event_id="+c.id+" ") {
				t.Errorf("send printed %q, want event_id=%s (the body's)", out.String(), c.id)
			}
		})
	}
	var errOut bytes.Buffer
	err = run(context.Background(), []string{"send", "--config", cfgPath, "--url", srv.URL, "--provider", "paddle", "--header", "no colon"}, func(string) string { return "" }, io.Discard, &errOut)
	if err == nil || !strings.Contains(errOut.String()+err.Error(), "Name: value") {
		t.Fatalf("bad --header: %v %q", err, errOut.String())
	}
	err = run(context.Background(), []string{"send", "--config", cfgPath, "--url", srv.URL, "--provider", "paddle", "--body", filepath.Join(dir, "missing")}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing body file: %v", err)
	}
}

// Issue 46: one provider's env: secret unset in this shell failed every
// subcommand, `send --provider demo` too. send resolves only the secrets
// of the provider it sends as; that provider's own unset secret is still
// an error naming its path.
func TestSendResolvesOnlyItsProvidersSecrets(t *testing.T) {
	cfgPath := writeConfigYAML(t, `providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{value: whsec_demo}]
    aggregate_id_path: [data.payment_id]
  stripe:
    scheme: stripe
    secrets: [{value: "env:STRIPE_WEBHOOK_SECRET_UNSET"}]
`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	none := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(context.Background(), []string{"send", "--config", cfgPath, "--url", srv.URL, "--provider", "demo"}, none, &out, io.Discard); err != nil {
		t.Fatalf("send --provider demo failed on stripe's unset secret: %v", err)
	}
	err := run(context.Background(), []string{"send", "--config", cfgPath, "--url", srv.URL, "--provider", "stripe"}, none, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "providers.stripe.secrets[0].value") || !strings.Contains(err.Error(), "STRIPE_WEBHOOK_SECRET_UNSET") {
		t.Fatalf("send --provider stripe with its secret unset: %v", err)
	}
	// migrate uses only database_url: it names that, not stripe's secret.
	err = run(context.Background(), []string{"migrate", "--config", cfgPath}, none, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "database_url") || strings.Contains(err.Error(), "STRIPE") {
		t.Fatalf("migrate without a database and with stripe's secret unset: %v", err)
	}
}

// A delivery send cannot make says so: a key-pair provider without
// --signing-key (gatehouse holds only the public key), a type the
// provider has no place for, an unconfigured provider.
func TestSendRefusesWhatItCannotSign(t *testing.T) {
	cfgPath := writeConfigYAML(t, `providers:
  discord:
    scheme: discord
    secrets: [{value: "`+strings.Repeat("ab", 32)+`"}]
  dropbox:
    scheme: dropbox
    secrets: [{value: dropbox-secret}]
`)
	none := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--provider", "discord"}, []string{"discord", "private key", "--signing-key", "Ed25519"}},
		{[]string{"--provider", "dropbox", "--type", "file.changed"}, []string{"dropbox", "file.changed", "list_folder"}},
		{[]string{"--provider", "stripe"}, []string{`"stripe" is not configured`, "discord, dropbox"}},
	} {
		err := run(context.Background(), append([]string{"send", "--config", cfgPath, "--url", "http://127.0.0.1:1"}, c.args...), none, io.Discard, io.Discard)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("send %v: error %v, want it to say %q", c.args, err, w)
			}
		}
	}
}

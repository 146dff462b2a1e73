package signature_test

// Interoperability with the providers' official Go libraries, in both
// directions where the library can sign. The libraries read the wall clock,
// so these tests use time.Now().

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v74/github"
	"github.com/slack-go/slack"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

const stripeEvent = `{"id":"evt_1Interop","object":"event","type":"payment_intent.succeeded","api_version":"2020-08-27","data":{"object":{"id":"pi_1","object":"payment_intent"}}}`

func newVerifier(t *testing.T, scheme, secret string) signature.Verifier {
	t.Helper()
	v, err := signature.New(signature.Config{Scheme: scheme, Secrets: []signature.Secret{{ID: "live", Value: []byte(secret)}}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestInteropStripe(t *testing.T) {
	const secret = "whsec_test_51HinteropSecretValue"
	wall := time.Now()
	v := newVerifier(t, "stripe", secret)
	payload := []byte(stripeEvent)

	t.Run("stripe-go signs, we verify", func(t *testing.T) {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: wall})
		h := http.Header{}
		h.Set("Stripe-Signature", sp.Header)
		res, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if res.SecretID != "live" || res.Timestamp.Unix() != wall.Unix() {
			t.Errorf("Result = %+v", res)
		}
		// Stale as judged by both sides.
		old := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: wall.Add(-301 * time.Second)})
		h.Set("Stripe-Signature", old.Header)
		if _, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall); !errors.Is(err, signature.ErrStaleTimestamp) {
			t.Errorf("301s old: %v", err)
		}
		// Signed with another secret.
		other := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret + "x", Timestamp: wall})
		h.Set("Stripe-Signature", other.Header)
		if _, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall); !errors.Is(err, signature.ErrBadSignature) {
			t.Errorf("other secret: %v", err)
		}
	})

	t.Run("we sign, stripe-go verifies", func(t *testing.T) {
		h, err := signature.Sign(signature.Config{Scheme: "stripe"}, []byte(secret), payload, wall, "")
		if err != nil {
			t.Fatal(err)
		}
		header := h.Get("Stripe-Signature")
		if err := webhook.ValidatePayloadWithTolerance(payload, header, secret, 300*time.Second); err != nil {
			t.Fatalf("ValidatePayloadWithTolerance: %v", err)
		}
		ev, err := webhook.ConstructEventWithOptions(payload, header, secret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
		if err != nil {
			t.Fatalf("ConstructEventWithOptions: %v", err)
		}
		if ev.ID != "evt_1Interop" {
			t.Errorf("event id %q", ev.ID)
		}
		if err := webhook.ValidatePayloadWithTolerance(payload, header, secret+"x", 300*time.Second); err == nil {
			t.Error("stripe-go accepted our signature under another secret")
		}
		stale, err := signature.Sign(signature.Config{Scheme: "stripe"}, []byte(secret), payload, wall.Add(-301*time.Second), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := webhook.ValidatePayloadWithTolerance(payload, stale.Get("Stripe-Signature"), secret, 300*time.Second); !errors.Is(err, webhook.ErrTooOld) {
			t.Errorf("stripe-go on our 301s-old signature: %v", err)
		}
	})
}

func TestInteropStandardWebhooks(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	wall := time.Now()
	payload := []byte(`{"type":"invoice.paid","data":{"id":"in_1"}}`)
	v := newVerifier(t, "standard-webhooks", secret)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("library signs, we verify", func(t *testing.T) {
		sig, err := wh.Sign("msg_interop", wall, payload)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_interop")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(wall.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		res, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if res.EventID != "msg_interop" || res.SecretID != "live" {
			t.Errorf("Result = %+v", res)
		}
		if _, err := v.Verify(&signature.Request{Header: h, Body: append(payload, ' ')}, wall); !errors.Is(err, signature.ErrBadSignature) {
			t.Errorf("changed body: %v", err)
		}
	})

	t.Run("we sign, library verifies", func(t *testing.T) {
		h, err := signature.Sign(signature.Config{Scheme: "standard-webhooks"}, []byte(secret), payload, wall, "msg_ours")
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(payload, h); err != nil {
			t.Fatalf("standardwebhooks Verify: %v", err)
		}
		if err := wh.Verify(append(payload, ' '), h); err == nil {
			t.Error("library accepted a changed body")
		}
	})
}

func TestInteropSlack(t *testing.T) {
	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	wall := time.Now()
	payload := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fdeploy&text=now")
	v := newVerifier(t, "slack", secret)

	t.Run("we sign, slack-go verifies", func(t *testing.T) {
		h, err := signature.Sign(signature.Config{Scheme: "slack"}, []byte(secret), payload, wall, "")
		if err != nil {
			t.Fatal(err)
		}
		sv, err := slack.NewSecretsVerifier(h, secret)
		if err != nil {
			t.Fatalf("NewSecretsVerifier: %v", err)
		}
		if _, err := sv.Write(payload); err != nil {
			t.Fatal(err)
		}
		if err := sv.Ensure(); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		sv, err = slack.NewSecretsVerifier(h, secret+"x")
		if err != nil {
			t.Fatal(err)
		}
		sv.Write(payload)
		if err := sv.Ensure(); err == nil {
			t.Error("slack-go accepted our signature under another secret")
		}
	})

	t.Run("signed as Slack documents, we verify", func(t *testing.T) {
		// https://docs.slack.dev/authentication/verifying-requests-from-slack/
		ts := strconv.FormatInt(wall.Unix(), 10)
		base := "v0:" + ts + ":" + string(payload)
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", "v0="+hexMAC(secret, base))
		res, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if res.Timestamp.Unix() != wall.Unix() {
			t.Errorf("Result = %+v", res)
		}
		// slack-go agrees on the same request.
		sv, err := slack.NewSecretsVerifier(h, secret)
		if err != nil {
			t.Fatal(err)
		}
		sv.Write(payload)
		if err := sv.Ensure(); err != nil {
			t.Fatalf("slack-go rejects the documented signature: %v", err)
		}
	})
}

func TestInteropGitHub(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	payload := []byte(`{"action":"opened","number":1}`)
	h, err := signature.Sign(signature.Config{Scheme: "github"}, []byte(secret), payload, time.Now(), "42:0b989ba4-242f-11e5-81e1-c7b6966d2516")
	if err != nil {
		t.Fatal(err)
	}
	sig := h.Get(github.SHA256SignatureHeader)
	got, err := github.ValidatePayloadFromBody("application/json", bytes.NewReader(payload), sig, []byte(secret))
	if err != nil {
		t.Fatalf("ValidatePayloadFromBody: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("payload = %q", got)
	}
	if _, err := github.ValidatePayloadFromBody("application/json", bytes.NewReader(payload), sig, []byte(secret+"x")); err == nil {
		t.Error("go-github accepted our signature under another secret")
	}
	if github.DeliveryID(&http.Request{Header: h}) != "0b989ba4-242f-11e5-81e1-c7b6966d2516" {
		t.Errorf("go-github reads delivery %q", github.DeliveryID(&http.Request{Header: h}))
	}
	// And our verifier reads the same request.
	res, err := newVerifier(t, "github", secret).Verify(&signature.Request{Header: h, Body: payload}, time.Now())
	if err != nil || res.EventID != "42:0b989ba4-242f-11e5-81e1-c7b6966d2516" {
		t.Fatalf("%+v %v", res, err)
	}
}

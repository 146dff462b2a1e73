package signature_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// The official libraries sign; extra entries are added around the genuine
// signature; gatehouse accepts exactly the headers the library accepts.
func TestInteropLeniency(t *testing.T) {
	wall := time.Now()

	t.Run("stripe-go", func(t *testing.T) {
		const secret = "whsec_test_51HleniencySecretValue"
		payload := []byte(stripeEvent)
		v := newVerifier(t, "stripe", secret)
		genuine := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: wall}).Header
		ts, sigs, _ := strings.Cut(genuine, ",")
		for name, header := range map[string]string{
			"junk v1 before":      ts + ",v1=not-hex," + sigs,
			"short hex v1 before": ts + ",v1=abcd," + sigs,
			"unknown scheme":      ts + ",v0=" + strings.Repeat("0", 64) + "," + sigs,
			"junk v1 only":        ts + ",v1=not-hex",
			"genuine":             genuine,
		} {
			libErr := webhook.ValidatePayload(payload, header, secret)
			h := http.Header{}
			h.Set("Stripe-Signature", header)
			_, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall)
			if (libErr == nil) != (err == nil) {
				t.Errorf("%s (%q): stripe-go %v, gatehouse %v", name, header, libErr, err)
			}
		}
	})

	t.Run("standard-webhooks", func(t *testing.T) {
		const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		payload := []byte(`{"type":"invoice.paid","data":{"id":"in_1"}}`)
		v := newVerifier(t, "standard-webhooks", secret)
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		genuine, err := wh.Sign("msg_lenient", wall, payload)
		if err != nil {
			t.Fatal(err)
		}
		for name, sig := range map[string]string{
			"junk v1 before":  "v1,<junk> " + genuine,
			"no comma before": "nocomma " + genuine,
			"other version":   "v1a,c2lnbmF0dXJl " + genuine,
			"short v1 after":  genuine + " v1,AAAA",
			"junk only":       "v1,<junk> nocomma",
			"genuine":         genuine,
			"wrong v1 only":   "v1,q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=",
		} {
			h := http.Header{}
			h.Set(standardwebhooks.HeaderWebhookID, "msg_lenient")
			h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(wall.Unix(), 10))
			h.Set(standardwebhooks.HeaderWebhookSignature, sig)
			libErr := wh.Verify(payload, h)
			_, err := v.Verify(&signature.Request{Header: h, Body: payload}, wall)
			if (libErr == nil) != (err == nil) {
				t.Errorf("%s (%q): library %v, gatehouse %v", name, sig, libErr, err)
			}
		}
	})
}

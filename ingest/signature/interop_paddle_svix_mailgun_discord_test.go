package signature_test

// Interoperability with the official Go libraries of Paddle, Svix (Clerk,
// Resend), Mailgun and Discord; helpers are in interop_providers_test.go.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	paddle "github.com/PaddleHQ/paddle-go-sdk/v3"
	"github.com/bwmarrin/discordgo"
	"github.com/mailgun/mailgun-go/v4"
	svix "github.com/svix/svix-webhooks/go"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// Vector from github.com/PaddleHQ/paddle-go-sdk/v3 v3.0.0
// webhook_verifier_test.go (identical in v1.0.0).
const (
	pdSignature = `ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8`
	pdPayload   = `{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","name":null,"status":"active","quantity":{"maximum":999999,"minimum":1},"tax_mode":"account_setting","product_id":"pro_01hsdn8qp7yydry3x1yeg6a9rv","unit_price":{"amount":"1000","currency_code":"USD"},"custom_data":null,"description":"testing","import_meta":null,"trial_period":null,"billing_cycle":{"interval":"month","frequency":1},"unit_price_overrides":[]},"event_id":"evt_01hsdn97563968dy0szkmgjwh3","event_type":"price.created","occurred_at":"2024-03-20T10:07:35.590857Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`
	pdSecretKey = `pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr`
)

// pdLibVerify runs paddle-go-sdk's WebhookVerifier.Verify on an HTTP request.
func pdLibVerify(t *testing.T, secret, sig string, body []byte) bool {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "https://example.com/paddle", bytes.NewReader(body))
	req.Header.Set("Paddle-Signature", sig)
	ok, err := paddle.NewWebhookVerifier(secret).Verify(req)
	if err != nil {
		t.Fatalf("paddle-go-sdk Verify: %v", err)
	}
	return ok
}

func pdRequest(sig string, body []byte) *signature.Request {
	h := http.Header{}
	h.Set("Paddle-Signature", sig)
	return &signature.Request{Method: http.MethodPost, Header: h, Body: body}
}

// TestInteropPaddle: the vector of github.com/PaddleHQ/paddle-go-sdk/v3
// v3.0.0 webhook_verifier_test.go is accepted by both (the SDK has no
// signer), then gatehouse signs and the SDK's WebhookVerifier verifies.
func TestInteropPaddle(t *testing.T) {
	v := ipVerifier(t, signature.Config{Scheme: "paddle"}, pdSecretKey)
	t.Run("paddle-go-sdk vector", func(t *testing.T) {
		at := time.Unix(1710929255, 0)
		body := []byte(pdPayload)
		if !pdLibVerify(t, pdSecretKey, pdSignature, body) {
			t.Fatal("paddle-go-sdk refused its own vector")
		}
		r := pdRequest(pdSignature, body)
		if res := ipAccept(t, v, r, at); !res.Timestamp.Equal(at) {
			t.Errorf("Timestamp = %v", res.Timestamp)
		}
		bad := ipTamper(t, body, "price.created")
		if pdLibVerify(t, pdSecretKey, pdSignature, bad) {
			t.Error("paddle-go-sdk accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), at)
		// The SDK test's other secret ("abc") is refused by both.
		if pdLibVerify(t, "abc", pdSignature, body) {
			t.Error("paddle-go-sdk accepted another secret")
		}
		ipRefuse(t, ipVerifier(t, signature.Config{Scheme: "paddle"}, "abc"), r, at)
	})
	t.Run("gatehouse signs, paddle-go-sdk verifies", func(t *testing.T) {
		body := []byte(pdPayload)
		h, err := signature.Sign(signature.Config{Scheme: "paddle"}, []byte(pdSecretKey), body, ipNow, "")
		if err != nil {
			t.Fatal(err)
		}
		sig := h.Get("Paddle-Signature")
		if !pdLibVerify(t, pdSecretKey, sig, body) {
			t.Fatalf("paddle-go-sdk refused gatehouse's %q", sig)
		}
		r := pdRequest(sig, body)
		ipAccept(t, v, r, ipNow)
		bad := ipTamper(t, body, "price.created")
		if pdLibVerify(t, pdSecretKey, sig, bad) {
			t.Error("paddle-go-sdk accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), ipNow)
	})
}

// Vector from github.com/svix/svix-webhooks v1.40.0 go/webhook_test.go
// (TestWebhookSign), and that file's known-bad signature.
const (
	svKey       = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	svMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	svTimestamp = 1614265330
	svPayload   = `{"test": 2432232314}`
	svExpected  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	svBadSig    = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

// svHeaders returns a delivery's headers under the prefix "svix" or "webhook".
func svHeaders(prefix, id, ts, sig string) http.Header {
	h := http.Header{}
	h.Set(prefix+"-id", id)
	h.Set(prefix+"-timestamp", ts)
	h.Set(prefix+"-signature", sig)
	return h
}

// TestInteropSvix: Clerk and Resend deliver through Svix. The
// github.com/svix/svix-webhooks v1.40.0 Go library (import
// github.com/svix/svix-webhooks/go) signs its TestWebhookSign vector and
// Clerk- and Resend-shaped events; gatehouse's "standard-webhooks" scheme
// verifies them under svix-* and webhook-* header names; then gatehouse
// signs and the library verifies.
func TestInteropSvix(t *testing.T) {
	wh, err := svix.NewWebhook(svKey)
	if err != nil {
		t.Fatal(err)
	}
	v := ipVerifier(t, signature.Config{Scheme: "standard-webhooks"}, svKey)
	t.Run("svix-webhooks vector", func(t *testing.T) {
		at := time.Unix(svTimestamp, 0)
		got, err := wh.Sign(svMsgID, at, []byte(svPayload))
		if err != nil || got != svExpected {
			t.Fatalf("svix Sign = %q, %v; want %q", got, err, svExpected)
		}
		for _, prefix := range []string{"svix", "webhook"} {
			h := svHeaders(prefix, svMsgID, "1614265330", svExpected)
			if err := wh.VerifyIgnoringTimestamp([]byte(svPayload), h); err != nil {
				t.Fatalf("svix refused its own vector (%s-*): %v", prefix, err)
			}
			r := &signature.Request{Method: http.MethodPost, Header: h, Body: []byte(svPayload)}
			if res := ipAccept(t, v, r, at); res.EventID != svMsgID {
				t.Errorf("%s-*: EventID = %q", prefix, res.EventID)
			}
			bad := ipTamper(t, []byte(svPayload), "2432232314")
			if wh.VerifyIgnoringTimestamp(bad, h) == nil {
				t.Error("svix accepted a changed body")
			}
			ipRefuse(t, v, ipWith(r, bad), at)
			h.Set(prefix+"-signature", svBadSig)
			if wh.VerifyIgnoringTimestamp([]byte(svPayload), h) == nil {
				t.Error("svix accepted its known-bad signature")
			}
			ipRefuse(t, v, r, at)
		}
	})
	events := map[string]string{
		"clerk":  `{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC","object":"user","first_name":"Example"},"object":"event","type":"user.created","timestamp":1654012591835}`,
		"resend": `{"type":"email.sent","created_at":"2024-02-22T23:41:12.126Z","data":{"email_id":"56761188-7520-42d8-8898-ff6fc54ce618","from":"Acme <onboarding@resend.dev>","subject":"Sending this example"}}`,
	}
	for name, payload := range events {
		t.Run(name+": svix signs, gatehouse verifies", func(t *testing.T) {
			wall := time.Now()
			body := []byte(payload)
			sig, err := wh.Sign("msg_2LJ5fVRevQ1JJ6y5lBrtUkWRxVQ", wall, body)
			if err != nil {
				t.Fatal(err)
			}
			h := svHeaders("svix", "msg_2LJ5fVRevQ1JJ6y5lBrtUkWRxVQ", strconv.FormatInt(wall.Unix(), 10), sig)
			if err := wh.Verify(body, h); err != nil {
				t.Fatalf("svix Verify: %v", err)
			}
			r := &signature.Request{Method: http.MethodPost, Header: h, Body: body}
			ipAccept(t, v, r, wall)
			bad := ipTamper(t, body, "data")
			if wh.Verify(bad, h) == nil {
				t.Error("svix accepted a changed body")
			}
			ipRefuse(t, v, ipWith(r, bad), wall)
		})
		t.Run(name+": gatehouse signs, svix verifies", func(t *testing.T) {
			wall := time.Now()
			body := []byte(payload)
			h, err := signature.Sign(signature.Config{Scheme: "standard-webhooks"}, []byte(svKey), body, wall, "msg_gatehouse1")
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(body, h); err != nil {
				t.Fatalf("svix refused gatehouse's webhook-* headers: %v", err)
			}
			sh := svHeaders("svix", h.Get("Webhook-Id"), h.Get("Webhook-Timestamp"), h.Get("Webhook-Signature"))
			if err := wh.Verify(body, sh); err != nil {
				t.Fatalf("svix refused gatehouse's signature under svix-* names: %v", err)
			}
			ipAccept(t, v, &signature.Request{Header: sh, Body: body}, wall)
			bad := ipTamper(t, body, "data")
			if wh.Verify(bad, sh) == nil {
				t.Error("svix accepted a changed body")
			}
			ipRefuse(t, v, &signature.Request{Header: sh, Body: bad}, wall)
		})
	}
}

// Mailgun vector: github.com/mailgun/mailgun-go/v4 v4.23.0 webhooks_test.go
// (key testWebhookSigningKey "webhook-signing-key" from domains_test.go,
// timestamp "123456789", token "token"); that test computes the signature at
// run time, so the value below is the one derived in
// /work/research/vectors-b.md (and checked here by the library).
const (
	mgKey       = "webhook-signing-key"
	mgSignature = "3ce8f010058ab80b8345d3513acc9027d34a00190ae8e4b4161e7636f68321f8"
	mgBadSig    = "6261647369676e6174757265" // hex("badsignature"), from webhooks_test.go
	mgEventData = `{"event":"delivered","id":"G9Bn5sl1TC6nu79C8C0bwg","timestamp":123456789.5,"recipient":"alice@example.com"}`
)

// mgLibVerify parses body as mailgun-go's WebhookPayload and runs
// VerifyWebhookSignature.
func mgLibVerify(t *testing.T, body []byte) bool {
	t.Helper()
	var p mailgun.WebhookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("mailgun-go payload: %v", err)
	}
	mg := mailgun.NewMailgun("example.com", "api-key")
	mg.SetWebhookSigningKey(mgKey)
	ok, err := mg.VerifyWebhookSignature(p.Signature)
	if err != nil {
		t.Fatalf("mailgun-go VerifyWebhookSignature: %v", err)
	}
	return ok
}

func mgBody(sig string) []byte {
	return []byte(`{"signature":{"timestamp":"123456789","token":"token","signature":"` + sig + `"},"event-data":` + mgEventData + `}`)
}

// TestInteropMailgun checks gatehouse's "mailgun" scheme against
// github.com/mailgun/mailgun-go/v4 v4.23.0 VerifyWebhookSignature, with the
// webhooks_test.go inputs and with deliveries gatehouse signs. Mailgun signs
// only timestamp + token: a changed signature object is refused by both, a
// changed event-data is accepted by both (Mailgun's design).
func TestInteropMailgun(t *testing.T) {
	v := ipVerifier(t, signature.Config{Scheme: "mailgun"}, mgKey)
	t.Run("mailgun-go vector", func(t *testing.T) {
		at := time.Unix(123456789, 0)
		body := mgBody(mgSignature)
		if !mgLibVerify(t, body) {
			t.Fatal("mailgun-go refused the vector")
		}
		r := &signature.Request{Method: http.MethodPost, Body: body, Header: http.Header{}}
		ipAccept(t, v, r, at)
		bad := bytes.Replace(body, []byte(`"token":"token"`), []byte(`"token":"tokeo"`), 1)
		if mgLibVerify(t, bad) {
			t.Error("mailgun-go accepted a changed token")
		}
		ipRefuse(t, v, ipWith(r, bad), at)
		// hex("badsignature"): mailgun-go says (false, nil) on the length
		// mismatch; gatehouse refuses it as malformed (not 64 hex digits).
		bad = mgBody(mgBadSig)
		if mgLibVerify(t, bad) {
			t.Error("mailgun-go accepted badsignature")
		}
		if _, err := v.Verify(ipWith(r, bad), at); !errors.Is(err, signature.ErrMalformedHeader) {
			t.Errorf("badsignature: gatehouse %v, want ErrMalformedHeader", err)
		}
	})
	t.Run("gatehouse signs, mailgun-go verifies", func(t *testing.T) {
		r := &signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(`{"event-data":` + mgEventData + `}`)}
		if err := signature.SignRequest(signature.Config{Scheme: "mailgun"}, []byte(mgKey), r, ipNow, ""); err != nil {
			t.Fatal(err)
		}
		if !mgLibVerify(t, r.Body) {
			t.Fatalf("mailgun-go refused gatehouse's body %s", r.Body)
		}
		ipAccept(t, v, r, ipNow)
		// One byte of the signed token changed.
		var p mailgun.WebhookPayload
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		bad := ipTamper(t, r.Body, p.Signature.Token)
		if mgLibVerify(t, bad) {
			t.Error("mailgun-go accepted a changed token")
		}
		ipRefuse(t, v, ipWith(r, bad), ipNow)
		// The event data is not signed: both accept a change there.
		changed := ipTamper(t, r.Body, "delivered")
		if !mgLibVerify(t, changed) {
			t.Error("mailgun-go refused a change of the unsigned event data")
		}
		ipAccept(t, v, ipWith(r, changed), ipNow)
	})
}

// Derived Discord vector (not published by Discord nor discordgo): the RFC
// 8032 §7.1 TEST 1 key signing discordgo's interactions_test.go message
// (timestamp "1608597133" + body), from /work/research/vectors-b.md.
const (
	dcSeed      = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	dcPublic    = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	dcTimestamp = "1608597133"
	dcSigBody   = "cb4cd782e9edaddb533995b5e8a2a5fd65b5971a9a62b43877b56b6503d705fb2c97fd3978af561820629b0932c14604bd95dcb7d477b9bafc8fc63ea3904008"
	dcSigPing   = "5ab3087e79bdf62aa525d5a1d4cc108ffa0330d84e84db163fe368150a56a217ba0d1bc121c713cbcfd3a4effa86afc6029be4a270a7a41a97815574105d7502"
)

// dcLibVerify runs discordgo.VerifyInteraction on an HTTP request built as
// discordgo's own test does, and checks the body can still be read.
func dcLibVerify(t *testing.T, pub ed25519.PublicKey, ts, sig string, body []byte) bool {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://localhost/interaction", bytes.NewReader(body))
	req.Header.Set("X-Signature-Timestamp", ts)
	req.Header.Set("X-Signature-Ed25519", sig)
	ok := discordgo.VerifyInteraction(req, pub)
	var rest bytes.Buffer
	if _, err := rest.ReadFrom(req.Body); err != nil || !bytes.Equal(rest.Bytes(), body) {
		t.Errorf("discordgo did not restore the body: %q, %v", rest.Bytes(), err)
	}
	return ok
}

func dcRequest(ts, sig string, body []byte) *signature.Request {
	h := http.Header{}
	h.Set("X-Signature-Timestamp", ts)
	h.Set("X-Signature-Ed25519", sig)
	return &signature.Request{Method: http.MethodPost, Header: h, Body: body}
}

// TestInteropDiscord checks gatehouse against github.com/bwmarrin/discordgo
// v0.28.1 VerifyInteraction: discordgo's interactions_test.go flow (random
// key, timestamp 1608597133, body "body", signed with crypto/ed25519 as
// Discord does), the derived RFC 8032 vector, and gatehouse's signatures.
func TestInteropDiscord(t *testing.T) {
	at := time.Unix(1608597133, 0)
	t.Run("discordgo test flow", func(t *testing.T) {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte("body")
		sig := hex.EncodeToString(ed25519.Sign(priv, append([]byte(dcTimestamp), body...)))
		if !dcLibVerify(t, pub, dcTimestamp, sig, body) {
			t.Fatal("discordgo refused")
		}
		v := ipVerifier(t, signature.Config{Scheme: "discord"}, hex.EncodeToString(pub))
		r := dcRequest(dcTimestamp, sig, body)
		ipAccept(t, v, r, at)
		bad := ipTamper(t, body, "y")
		if dcLibVerify(t, pub, dcTimestamp, sig, bad) {
			t.Error("discordgo accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), at)
	})
	pubBytes, _ := hex.DecodeString(dcPublic)
	pub := ed25519.PublicKey(pubBytes)
	v := ipVerifier(t, signature.Config{Scheme: "discord"}, dcPublic)
	for _, c := range []struct{ body, sig, at string }{{"body", dcSigBody, "b"}, {`{"type":1}`, dcSigPing, "type"}} {
		t.Run("derived RFC 8032 vector "+c.body, func(t *testing.T) {
			body := []byte(c.body)
			if !dcLibVerify(t, pub, dcTimestamp, c.sig, body) {
				t.Fatal("discordgo refused the derived vector")
			}
			r := dcRequest(dcTimestamp, c.sig, body)
			ipAccept(t, v, r, at)
			bad := ipTamper(t, body, c.at)
			if dcLibVerify(t, pub, dcTimestamp, c.sig, bad) {
				t.Error("discordgo accepted a changed body")
			}
			ipRefuse(t, v, ipWith(r, bad), at)
		})
	}
	t.Run("gatehouse signs, discordgo verifies", func(t *testing.T) {
		body := []byte(`{"type":2,"id":"1234567890","data":{"name":"ping"}}`)
		h, err := signature.Sign(signature.Config{Scheme: "discord"}, []byte(dcSeed), body, ipNow, "")
		if err != nil {
			t.Fatal(err)
		}
		ts, sig := h.Get("X-Signature-Timestamp"), h.Get("X-Signature-Ed25519")
		if !dcLibVerify(t, pub, ts, sig, body) {
			t.Fatal("discordgo refused gatehouse's signature")
		}
		r := dcRequest(ts, sig, body)
		ipAccept(t, v, r, ipNow)
		bad := ipTamper(t, body, "ping")
		if dcLibVerify(t, pub, ts, sig, bad) {
			t.Error("discordgo accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), ipNow)
	})
}

package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

func mac(secret, msg string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// TestKnownAnswers pins every scheme to vectors published by the providers
// or computed here independently of the package.
func TestKnownAnswers(t *testing.T) {
	const slackDocBody = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	const slackGoBody = `{"token":"aF5ynEYQH0dFN9imlgcADxDB","team_id":"XXXXXXXXX","api_app_id":"YYYYYYYYY","event":{"type":"app_mention","user":"AAAAAAAAA","text":"<@EEEEEEEEE> hello world","client_msg_id":"477cc591-ch73-a14z-4db8-g0cd76321bec","ts":"1531431954.000073","channel":"TTTTTTTTT","event_ts":"1531431954.000073"},"type":"event_callback","event_id":"TvBP7LRED7","event_time":1531431954,"authed_users":["EEEEEEEEE"]}`
	refTS := "1760000000"
	tests := []struct {
		name    string
		cfg     signature.Config
		secret  string
		body    string
		at      time.Time
		eventID string
		headers map[string]string
	}{
		{
			name: "slack documentation example", cfg: signature.Config{Scheme: "slack"},
			secret: "8f742231b10e8888abcd99yyyzzz85a5", body: slackDocBody, at: time.Unix(1531420618, 0),
			headers: map[string]string{
				"X-Slack-Request-Timestamp": "1531420618",
				"X-Slack-Signature":         "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
			},
		},
		{
			name: "slack-go test vector", cfg: signature.Config{Scheme: "slack"},
			secret: "e6b19c573432dcc6b075501d51b51bb8", body: slackGoBody, at: time.Unix(1531431954, 0),
			headers: map[string]string{
				"X-Slack-Request-Timestamp": "1531431954",
				"X-Slack-Signature":         "v0=adada4ed31709aef585c2580ca3267678c6a8eaeb7e0c1aca3ee57b656886b2c",
			},
		},
		{
			name: "github documentation example", cfg: signature.Config{Scheme: "github"},
			secret: "It's a Secret to Everybody", body: "Hello, World!", eventID: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			headers: map[string]string{
				"X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
				"X-GitHub-Delivery":   "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			},
		},
		{
			name: "standard webhooks library vector", cfg: signature.Config{Scheme: "standard-webhooks"},
			secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body: `{"test": 2432232314}`,
			at: time.Unix(1614265330, 0), eventID: "msg_p5jXN8AQM9LWM0D4loKWxJek",
			headers: map[string]string{
				"webhook-id":        "msg_p5jXN8AQM9LWM0D4loKWxJek",
				"webhook-timestamp": "1614265330",
				"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
			},
		},
		{
			name: "reference, independent HMAC", cfg: signature.Config{Scheme: "reference", TimestampHeader: "X-Ts", SignatureHeader: "X-Sig"},
			secret: "ref-secret", body: body, at: time.Unix(1760000000, 0),
			headers: map[string]string{"X-Ts": refTS, "X-Sig": hex.EncodeToString(mac("ref-secret", refTS+"."+body))},
		},
		{
			name: "stripe, independent HMAC", cfg: signature.Config{Scheme: "stripe"},
			secret: "whsec_abc", body: body, at: time.Unix(1760000000, 0),
			headers: map[string]string{"Stripe-Signature": "t=1760000000,v1=" + hex.EncodeToString(mac("whsec_abc", "1760000000."+body))},
		},
		{
			name: "shopify, independent HMAC", cfg: signature.Config{Scheme: "shopify"},
			secret: "shpss_abc", body: body, eventID: "b54557e4",
			headers: map[string]string{
				"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac("shpss_abc", body)),
				"X-Shopify-Webhook-Id":  "b54557e4",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := http.Header{}
			for k, v := range tt.headers {
				want.Set(k, v)
			}
			cfg := tt.cfg
			cfg.Secrets = []signature.Secret{{ID: "k", Value: []byte(tt.secret)}}
			v, err := signature.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			at := tt.at
			if at.IsZero() {
				at = now
			}
			res, err := v.Verify(&signature.Request{Header: want, Body: []byte(tt.body)}, at)
			if err != nil {
				t.Fatalf("Verify of published vector: %v", err)
			}
			if res.SecretID != "k" || res.EventID != tt.eventID {
				t.Errorf("Result = %+v", res)
			}
			got, err := signature.Sign(cfg, []byte(tt.secret), []byte(tt.body), at, tt.eventID)
			if err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if got.Get(k) != want.Get(k) {
					t.Errorf("Sign %s = %q, want %q", k, got.Get(k), want.Get(k))
				}
			}
			if len(got) != len(want) {
				t.Errorf("Sign produced headers %v, want exactly %v", got, want)
			}
		})
	}
}

func verifyOne(t *testing.T, cfg signature.Config, h http.Header, b string) (signature.Result, error) {
	t.Helper()
	v, err := signature.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v.Verify(&signature.Request{Header: h, Body: []byte(b)}, now)
}

func TestReferenceUpperCaseHex(t *testing.T) {
	cfg := signature.Config{Scheme: "reference", TimestampHeader: "X-Ts", SignatureHeader: "X-Sig",
		Secrets: []signature.Secret{{ID: "a", Value: []byte("s3cr3t")}}}
	h, err := signature.Sign(cfg, []byte("s3cr3t"), []byte(body), now, "")
	if err != nil {
		t.Fatal(err)
	}
	h.Set("X-Sig", strings.ToUpper(h.Get("X-Sig")))
	if _, err := verifyOne(t, cfg, h, body); err != nil {
		t.Fatalf("upper-case hex: %v", err)
	}
}

func TestStripeRolloverHeader(t *testing.T) {
	oldS, newS := "whsec_old", "whsec_new"
	ts := "1760000000"
	sigOld := hex.EncodeToString(mac(oldS, ts+"."+body))
	sigNew := hex.EncodeToString(mac(newS, ts+"."+body))
	junk := strings.Repeat("0", 64)
	for _, tt := range []struct {
		name, header string
		secrets      []signature.Secret
		wantID       string
		wantErr      error
	}{
		{"both signatures, both secrets", "t=" + ts + ",v1=" + sigNew + ",v1=" + sigOld, []signature.Secret{{ID: "old", Value: []byte(oldS)}, {ID: "new", Value: []byte(newS)}}, "old", nil},
		{"only old configured", "t=" + ts + ",v1=" + sigNew + ",v1=" + sigOld, []signature.Secret{{ID: "old", Value: []byte(oldS)}}, "old", nil},
		{"junk first, v0 and unknown keys ignored, spaces", " t = " + ts + " , v1=" + junk + ", v0=" + junk + ",x-future=a=b, v1=" + sigNew + " ", []signature.Secret{{ID: "new", Value: []byte(newS)}}, "new", nil},
		{"v0 matching is not enough", "t=" + ts + ",v1=" + junk + ",v0=" + sigNew, []signature.Secret{{ID: "new", Value: []byte(newS)}}, "", signature.ErrBadSignature},
		{"too many v1", "t=" + ts + strings.Repeat(",v1="+junk, 40), []signature.Secret{{ID: "new", Value: []byte(newS)}}, "", signature.ErrMalformedHeader},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Stripe-Signature", tt.header)
			res, err := verifyOne(t, signature.Config{Scheme: "stripe", Secrets: tt.secrets}, h, body)
			if !errors.Is(err, tt.wantErr) || (err == nil && res.SecretID != tt.wantID) {
				t.Fatalf("got %+v, %v; want id %q, err %v", res, err, tt.wantID, tt.wantErr)
			}
		})
	}
}

func TestGitHubEventID(t *testing.T) {
	cfg := signature.Config{Scheme: "github", Secrets: []signature.Secret{{Value: []byte("gh")}}}
	h, err := signature.Sign(cfg, []byte("gh"), []byte(body), now, "guid-1")
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("X-GitHub-Hook-ID") != "" {
		t.Errorf("unexpected hook id header")
	}
	res, err := verifyOne(t, cfg, h, body)
	if err != nil || res.EventID != "guid-1" || res.SecretID != "0" {
		t.Fatalf("no hook id: %+v %v", res, err)
	}
	h.Set("X-GitHub-Hook-ID", "987")
	if res, err := verifyOne(t, cfg, h, body); err != nil || res.EventID != "987:guid-1" {
		t.Fatalf("hook id: %+v %v", res, err)
	}
	// Only the legacy SHA-1 header: the SHA-256 one is missing.
	h2 := http.Header{}
	h2.Set("X-Hub-Signature", "sha1="+strings.Repeat("ab", 20))
	h2.Set("X-GitHub-Delivery", "guid-1")
	if _, err := verifyOne(t, cfg, h2, body); !errors.Is(err, signature.ErrMissingHeader) {
		t.Fatalf("sha1 only: %v", err)
	}
}

func TestStandardWebhooks(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	bare := strings.TrimPrefix(secret, "whsec_")
	cfg := signature.Config{Scheme: "standard-webhooks", Secrets: []signature.Secret{{ID: "bare", Value: []byte(bare)}}}
	h, err := signature.Sign(cfg, []byte(secret), []byte(body), now, "msg_1")
	if err != nil {
		t.Fatal(err)
	}
	good := h.Get("webhook-signature")
	junk := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	t.Run("bare base64 secret, several entries, other versions ignored", func(t *testing.T) {
		h := h.Clone()
		h.Set("webhook-signature", "v1a,c2lnbmF0dXJl "+junk+"  "+good+" v2,xyz")
		if res, err := verifyOne(t, cfg, h, body); err != nil || res.SecretID != "bare" || res.EventID != "msg_1" {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("svix header names", func(t *testing.T) {
		sv := http.Header{}
		sv.Set("svix-id", h.Get("webhook-id"))
		sv.Set("svix-timestamp", h.Get("webhook-timestamp"))
		sv.Set("svix-signature", good)
		if res, err := verifyOne(t, cfg, sv, body); err != nil || res.EventID != "msg_1" || !res.Timestamp.Equal(now) {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("webhook-id is signed", func(t *testing.T) {
		h := h.Clone()
		h.Set("webhook-id", "msg_2")
		if _, err := verifyOne(t, cfg, h, body); !errors.Is(err, signature.ErrBadSignature) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("partial standard headers do not fall back to svix", func(t *testing.T) {
		sv := http.Header{}
		sv.Set("webhook-id", "msg_1")
		sv.Set("svix-timestamp", h.Get("webhook-timestamp"))
		sv.Set("svix-signature", good)
		if _, err := verifyOne(t, cfg, sv, body); !errors.Is(err, signature.ErrMissingHeader) {
			t.Fatalf("%v", err)
		}
	})
}

func TestShopifyEventID(t *testing.T) {
	cfg := signature.Config{Scheme: "shopify", Secrets: []signature.Secret{{ID: "s", Value: []byte("shpss")}}}
	h, err := signature.Sign(cfg, []byte("shpss"), []byte(body), now, "wh-1")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := verifyOne(t, cfg, h, body); err != nil || res.EventID != "wh-1" || !res.Timestamp.IsZero() {
		t.Fatalf("%+v %v", res, err)
	}
}

func hexMAC(secret, msg string) string { return hex.EncodeToString(mac(secret, msg)) }

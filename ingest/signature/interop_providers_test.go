package signature_test

// Interoperability with more providers' official Go libraries (Twilio,
// SendGrid here; Paddle, Svix for Clerk and Resend, Mailgun, Discord in
// interop_paddle_svix_mailgun_discord_test.go), in both directions where
// the library can sign, starting from each library's own published test vector. Every
// genuine delivery must be accepted by gatehouse (SecretID "k") and by the
// library; a delivery with one byte of the body changed must be refused by
// both, by gatehouse with ErrBadSignature.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"
	twilio "github.com/twilio/twilio-go/client"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// ipNow is the verification time of deliveries signed by gatehouse.
var ipNow = time.Unix(1_760_000_000, 0)

// ipVerifier returns a verifier of cfg holding secret under the ID "k".
func ipVerifier(t *testing.T, cfg signature.Config, secret string) signature.Verifier {
	t.Helper()
	cfg.Secrets = []signature.Secret{{ID: "k", Value: []byte(secret)}}
	v, err := signature.New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", cfg.Scheme, err)
	}
	return v
}

// ipAccept asserts that v accepts r at time at and reports the secret "k".
func ipAccept(t *testing.T, v signature.Verifier, r *signature.Request, at time.Time) signature.Result {
	t.Helper()
	res, err := v.Verify(r, at)
	if err != nil {
		t.Fatalf("gatehouse refused a genuine delivery: %v", err)
	}
	if res.SecretID != "k" {
		t.Errorf("SecretID = %q, want k", res.SecretID)
	}
	return res
}

// ipRefuse asserts that v refuses r at time at with ErrBadSignature.
func ipRefuse(t *testing.T, v signature.Verifier, r *signature.Request, at time.Time) {
	t.Helper()
	if _, err := v.Verify(r, at); !errors.Is(err, signature.ErrBadSignature) {
		t.Fatalf("gatehouse: got %v, want ErrBadSignature", err)
	}
}

// ipTamper returns a copy of b with one byte changed: the first byte of the
// first occurrence of at, replaced by a neighbouring letter or digit.
func ipTamper(t *testing.T, b []byte, at string) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(at))
	if i < 0 {
		t.Fatalf("%q not in body", at)
	}
	out := bytes.Clone(b)
	switch out[i] {
	case 'z', 'Z', '9':
		out[i]--
	default:
		out[i]++
	}
	return out
}

// ipWith returns a shallow copy of r with body b.
func ipWith(r *signature.Request, b []byte) *signature.Request {
	c := *r
	c.Body = b
	return &c
}

// Vectors from github.com/twilio/twilio-go v1.23.0, client/request_validator_test.go.
const (
	twTestURL  = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twBaseURL  = "https://mycompany.com/myapp.php"
	twToken    = "12345"
	twBodyHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
	twJSONBody = `{"property": "value", "boolean": true}`
	twFormBody = `property=value&boolean=true`
)

var twParams = map[string]string{
	"Digits": "1234", "CallSid": "CA1234567890ABCDE", "To": "+18005551212", "Caller": "+14158675309",
	"From": "+14158675309", "ReasonConferenceEnded": "test", "Reason": "Participant",
}

func twForm() []byte {
	v := url.Values{}
	for k, val := range twParams {
		v.Set(k, val)
	}
	return []byte(v.Encode())
}

func twRequest(query string, body []byte, sig string) *signature.Request {
	h := http.Header{}
	h.Set("X-Twilio-Signature", sig)
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return &signature.Request{Method: http.MethodPost, RawQuery: query, Header: h, Body: body}
}

// TestInteropTwilioVectors replays the vectors of github.com/twilio/twilio-go
// v1.23.0 client/request_validator_test.go (TestRequestValidator_Validate and
// TestRequestValidator_ValidateBody) through both twilio-go and gatehouse.
func TestInteropTwilioVectors(t *testing.T) {
	rv := twilio.NewRequestValidator(twToken)
	// The form vectors hold Reason and ReasonConferenceEnded: parameters
	// are ordered by name, not by their joined name+value texts
	// ("ReasonParticipant" sorts after "ReasonConferenceEndedtest").
	cases := []struct {
		name, publicURL, query, body, sig string
		want                              bool
	}{
		{"form params (vOEb5U)", twBaseURL, "foo=1&bar=2", string(twForm()), "vOEb5UThFn24KEfnOFLQY2AE5FY=", true},
		{"http variant (n2xBNy)", "http://mycompany.com/myapp.php", "foo=1&bar=2", string(twForm()), "n2xBNyzSW7rfYStDtOFiFMv7qNo=", true},
		{"wrong sort order (95+Bu0) refused", twBaseURL, "foo=1&bar=2", string(twForm()), "95+Bu0JVPi0r/SsESZCVf0dWAjw=", false},
		{"json bodySHA256 (a9nBmq)", twBaseURL, "foo=1&bar=2&bodySHA256=" + twBodyHash, twJSONBody, "a9nBmqA0ju/hNViExpshrM61xv4=", true},
		{"json bodySHA256 only (y77kIz)", twBaseURL, "bodySHA256=" + twBodyHash, twJSONBody, "y77kIzt2vzLz71DgmJGsen2scGs=", true},
		{"form body (NBdBDr)", twBaseURL, "foo=1&bar=2", twFormBody, "NBdBDr/T/lgjI+tlgpXjKZQZs/k=", true},
		{"json body without bodySHA256 refused", twBaseURL, "foo=1&bar=2", twJSONBody, "vOEb5UThFn24KEfnOFLQY2AE5FY=", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full := c.publicURL + "?" + c.query
			if got := rv.ValidateBody(full, []byte(c.body), c.sig); got != c.want {
				t.Fatalf("twilio-go ValidateBody = %v, want %v", got, c.want)
			}
			v := ipVerifier(t, signature.Config{Scheme: "twilio", PublicURL: c.publicURL}, twToken)
			r := twRequest(c.query, []byte(c.body), c.sig)
			_, err := v.Verify(r, ipNow)
			if (err == nil) != c.want {
				t.Fatalf("twilio-go says %v, gatehouse says %v", c.want, err)
			}
			if !c.want {
				ipRefuse(t, v, r, ipNow)
				return
			}
			ipAccept(t, v, r, ipNow)
			// One byte of the body changed: both refuse.
			at := "value"
			if strings.Contains(c.body, "CallSid") {
				at = "CA1234567890ABCDE"
			}
			bad := ipTamper(t, []byte(c.body), at)
			if rv.ValidateBody(full, bad, c.sig) {
				t.Error("twilio-go accepted a changed body")
			}
			ipRefuse(t, v, ipWith(r, bad), ipNow)
		})
	}
	t.Run("params map (Validate)", func(t *testing.T) {
		if !rv.Validate(twTestURL, twParams, "vOEb5UThFn24KEfnOFLQY2AE5FY=") {
			t.Fatal("twilio-go Validate refused its own vector")
		}
	})
	// twilio-go also accepts vOEb5U for https://mycompany.com:1234/…: its
	// removePort drops any port, not only the scheme's default one, and so
	// does gatehouse.
	t.Run("non-default port", func(t *testing.T) {
		withPort := strings.Replace(twTestURL, ".com", ".com:1234", 1)
		if !rv.ValidateBody(withPort, twForm(), "vOEb5UThFn24KEfnOFLQY2AE5FY=") {
			t.Fatal("twilio-go refused its own port vector")
		}
		v := ipVerifier(t, signature.Config{Scheme: "twilio", PublicURL: "https://mycompany.com:1234/myapp.php"}, twToken)
		_, err := v.Verify(twRequest("foo=1&bar=2", twForm(), "vOEb5UThFn24KEfnOFLQY2AE5FY="), ipNow)
		if err != nil {
			t.Fatalf("PublicURL with :1234: gatehouse refuses (%v), twilio-go accepts", err)
		}
	})
}

// TestInteropTwilioSign: gatehouse signs (form and JSON bodies, as Twilio
// sends them) and twilio-go v1.23.0 (client.RequestValidator.ValidateBody)
// validates, using the request_validator_test.go URL, token and params.
func TestInteropTwilioSign(t *testing.T) {
	rv := twilio.NewRequestValidator(twToken)
	cfg := signature.Config{Scheme: "twilio", PublicURL: twBaseURL}
	v := ipVerifier(t, cfg, twToken)
	sms := url.Values{"MessageSid": {"SM1234567890ABCDE"}, "From": {"+14158675309"}, "FromCity": {"SAN FRANCISCO"},
		"To": {"+18005551212"}, "ToCity": {"NEW YORK"}, "Body": {"Hello & welcome"}, "NumMedia": {"0"}}
	for _, c := range []struct{ name, ctype, body, at string }{
		{"form (twilio-go vector params)", "application/x-www-form-urlencoded", string(twForm()), "CA1234567890ABCDE"},
		{"form (SMS)", "application/x-www-form-urlencoded", sms.Encode(), "SM1234567890ABCDE"},
		{"json", "application/json", twJSONBody, "value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Content-Type", c.ctype)
			r := &signature.Request{Method: http.MethodPost, RawQuery: "foo=1&bar=2", Header: h, Body: []byte(c.body)}
			if err := signature.SignRequest(cfg, []byte(twToken), r, ipNow, ""); err != nil {
				t.Fatal(err)
			}
			sig := r.Header.Get("X-Twilio-Signature")
			full := twBaseURL + "?" + r.RawQuery
			if c.ctype == "application/json" && r.RawQuery != "foo=1&bar=2&bodySHA256="+twBodyHash {
				t.Errorf("RawQuery = %q, want the bodySHA256 of the twilio-go vector", r.RawQuery)
			}
			if !rv.ValidateBody(full, r.Body, sig) {
				t.Errorf("twilio-go refused gatehouse's signature %q for %s", sig, full)
			}
			ipAccept(t, v, r, ipNow)
			bad := ipTamper(t, r.Body, c.at)
			if rv.ValidateBody(full, bad, sig) {
				t.Error("twilio-go accepted a changed body")
			}
			ipRefuse(t, v, ipWith(r, bad), ipNow)
		})
	}
}

// Vector from github.com/sendgrid/sendgrid-go v3.16.0+incompatible,
// helpers/eventwebhook/eventwebhook_test.go (payload bytes as that test
// builds them: sorted keys, no HTML escaping, trailing "\r\n").
const (
	sgPublicKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
	sgSignature = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
	sgTimestamp = "1600112502"
	sgPayload   = "[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n"
)

func sgRequest(ts, sig string, body []byte) *signature.Request {
	h := http.Header{}
	h.Set(eventwebhook.TimestampHTTPHeader, ts)
	h.Set(eventwebhook.VerificationHTTPHeader, sig)
	return &signature.Request{Method: http.MethodPost, Header: h, Body: body}
}

// sgLibVerify runs sendgrid-go's eventwebhook.VerifySignature.
func sgLibVerify(t *testing.T, pubB64 string, body []byte, sig, ts string) bool {
	t.Helper()
	pub, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(pubB64)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := eventwebhook.VerifySignature(pub, body, sig, ts)
	if err != nil {
		t.Fatalf("sendgrid-go VerifySignature: %v", err)
	}
	return ok
}

// TestInteropSendGrid: the vector of github.com/sendgrid/sendgrid-go
// v3.16.0+incompatible helpers/eventwebhook/eventwebhook_test.go is accepted
// by both; then gatehouse signs with a fresh P-256 key and sendgrid-go's
// VerifySignature checks it.
func TestInteropSendGrid(t *testing.T) {
	t.Run("sendgrid-go vector", func(t *testing.T) {
		at := time.Unix(1600112502, 0)
		v := ipVerifier(t, signature.Config{Scheme: "sendgrid"}, sgPublicKey)
		if !sgLibVerify(t, sgPublicKey, []byte(sgPayload), sgSignature, sgTimestamp) {
			t.Fatal("sendgrid-go refused its own vector")
		}
		r := sgRequest(sgTimestamp, sgSignature, []byte(sgPayload))
		if res := ipAccept(t, v, r, at); !res.Timestamp.Equal(at) {
			t.Errorf("Timestamp = %v", res.Timestamp)
		}
		bad := ipTamper(t, []byte(sgPayload), "dropped")
		if sgLibVerify(t, sgPublicKey, bad, sgSignature, sgTimestamp) {
			t.Error("sendgrid-go accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), at)
	})
	t.Run("gatehouse signs, sendgrid-go verifies", func(t *testing.T) {
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p8, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		spki, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pubB64 := base64.StdEncoding.EncodeToString(spki)
		body := []byte(sgPayload)
		h, err := signature.Sign(signature.Config{Scheme: "sendgrid"}, []byte(base64.StdEncoding.EncodeToString(p8)), body, ipNow, "")
		if err != nil {
			t.Fatal(err)
		}
		ts, sig := h.Get(eventwebhook.TimestampHTTPHeader), h.Get(eventwebhook.VerificationHTTPHeader)
		if !sgLibVerify(t, pubB64, body, sig, ts) {
			t.Fatal("sendgrid-go refused gatehouse's signature")
		}
		v := ipVerifier(t, signature.Config{Scheme: "sendgrid"}, pubB64)
		r := sgRequest(ts, sig, body)
		ipAccept(t, v, r, ipNow)
		bad := ipTamper(t, body, "dropped")
		if sgLibVerify(t, pubB64, bad, sig, ts) {
			t.Error("sendgrid-go accepted a changed body")
		}
		ipRefuse(t, v, ipWith(r, bad), ipNow)
	})
}

package signature_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// TestTwilioURLForms: a delivery signed over the public URL with the
// scheme's default port, without it, or over a public URL holding a query
// of its own, is accepted by a verifier configured with either form, as
// twilio-go accepts both; another port or path is refused.
func TestTwilioURLForms(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name, signedURL, configured string
		want                        bool
	}{
		{"as configured", "https://h.example/tw", "https://h.example/tw", true},
		{"default port added", "https://h.example:443/tw", "https://h.example/tw", true},
		{"default port removed", "https://h.example/tw", "https://h.example:443/tw", true},
		{"other port removed", "https://h.example/tw", "https://h.example:8443/tw", true},
		{"http default port", "http://h.example:80/tw", "http://h.example/tw", true},
		{"query in the public URL", "https://h.example/tw?acct=1", "https://h.example/tw?acct=1", true},
		{"other path", "https://h.example/other", "https://h.example/tw", false},
		{"other port", "https://h.example:8443/tw", "https://h.example/tw", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Content-Type", "application/x-www-form-urlencoded")
			r := &signature.Request{Method: http.MethodPost, RawQuery: "x=1", Header: h, Body: []byte("CallSid=CA1&From=%2B1415")}
			signed := signature.Config{Scheme: "twilio", PublicURL: c.signedURL}
			if err := signature.SignRequest(signed, []byte(twToken), r, now, ""); err != nil {
				t.Fatal(err)
			}
			v := ipVerifier(t, signature.Config{Scheme: "twilio", PublicURL: c.configured}, twToken)
			if _, err := v.Verify(r, now); (err == nil) != c.want {
				t.Fatalf("Verify = %v, want accepted=%v", err, c.want)
			}
		})
	}
}

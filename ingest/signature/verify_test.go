package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// TestSchemeTableCoversEveryScheme: every scheme New accepts is in the
// table of TestVerifySchemes, with its documented default tolerance.
func TestSchemeTableCoversEveryScheme(t *testing.T) {
	inTable := map[string]bool{}
	for _, s := range schemes() {
		inTable[s.cfg.Scheme] = true
		if k, _ := providers.Lookup(s.cfg.Scheme); s.tol != 0 && k.ReplayWindow() != s.tol {
			t.Errorf("%s: table tolerance %s, the catalogue's window %s", s.name, s.tol, k.ReplayWindow())
		}
		if need := signature.NeedsPublicURL(s.cfg.Scheme, s.cfg.HMAC); need != (s.cfg.PublicURL != "") {
			t.Errorf("%s: PublicURL %q, but NeedsPublicURL is %v", s.name, s.cfg.PublicURL, need)
		}
		if s.bodyExpect != nil && s.bodyWhy == "" {
			t.Errorf("%s: body cases overridden without a reason", s.name)
		}
	}
	for _, name := range signature.Schemes() {
		if !inTable[name] {
			t.Errorf("scheme %q is missing from the table of TestVerifySchemes (helpers_test.go, presets_suite_test.go)", name)
		}
	}
	if len(inTable) != len(signature.Schemes()) {
		t.Errorf("table has %d schemes, Schemes() %d", len(inTable), len(signature.Schemes()))
	}
}

// TestCatalogueSignsURL: the catalogue's SignsURL (what internal/config
// requires public_url for) agrees with the signing rules of every kind.
func TestCatalogueSignsURL(t *testing.T) {
	for _, name := range providers.Names() {
		k, _ := providers.Lookup(name)
		if got := signature.NeedsPublicURL(k.Scheme, nil); got != k.SignsURL {
			t.Errorf("%s: catalogue SignsURL %v, signing rules %v", name, k.SignsURL, got)
		}
	}
}

// TestVerifySchemes runs the same table against every scheme.
func TestVerifySchemes(t *testing.T) {
	for _, s := range schemes() {
		t.Run(s.name, func(t *testing.T) {
			both := s.verifier(t, s.both()...)
			secrets := []string{s.old.verify, s.new.verify, s.old.sign, s.new.sign}

			type tc struct {
				name     string
				v        signature.Verifier
				r        *signature.Request
				wantErr  error // nil = success
				wantID   string
				wantTime time.Time
			}
			ts := func(at time.Time) time.Time {
				if s.tol > 0 {
					return at
				}
				return time.Time{}
			}
			staleErr, futureErr := signature.ErrStaleTimestamp, signature.ErrFutureTimestamp
			tol := s.tol
			if tol == 0 {
				staleErr, futureErr = nil, nil // no timestamp: nothing to reject
				tol = 5 * time.Minute
			}
			sign := func(k suiteKeys, at time.Time) *signature.Request { return s.request(t, k, at) }
			withBody := func(b string) *signature.Request {
				r := sign(s.new, now)
				r.Body = []byte(b)
				return r
			}
			signed := string(sign(s.new, now).Body)
			changed := strings.Replace(signed, "1200", "1300", 1)
			if changed == signed {
				t.Fatalf("body %q has no 1200 to change", signed)
			}
			tolS := tol.String()
			cases := []tc{
				{name: "valid new secret", v: both, r: sign(s.new, now), wantID: "new", wantTime: ts(now)},
				{name: "valid old secret during rotation", v: both, r: sign(s.old, now), wantID: "old", wantTime: ts(now)},
				{name: "exactly " + tolS + " old", v: both, r: sign(s.new, now.Add(-tol)), wantID: "new", wantTime: ts(now.Add(-tol))},
				{name: "exactly " + tolS + " ahead", v: both, r: sign(s.new, now.Add(tol)), wantID: "new", wantTime: ts(now.Add(tol))},
				{name: tolS + "+1s old", v: both, r: sign(s.new, now.Add(-tol-time.Second)), wantErr: staleErr, wantID: "new", wantTime: ts(now.Add(-tol - time.Second))},
				{name: tolS + "+1s ahead", v: both, r: sign(s.new, now.Add(tol+time.Second)), wantErr: futureErr, wantID: "new", wantTime: ts(now.Add(tol + time.Second))},
				// For schemes with bodyExpect, a nil wantErr here means the
				// change is ACCEPTED by the provider's design (s.bodyWhy).
				{name: "one body byte changed", v: both, r: withBody(changed), wantErr: s.bodyWant("changed"), wantID: "new", wantTime: ts(now)},
				{name: "body re-serialised", v: both, r: withBody(s.reserialised(t, signed)), wantErr: s.bodyWant("reserialised"), wantID: "new", wantTime: ts(now)},
				{name: "empty body", v: both, r: withBody(""), wantErr: s.bodyWant("empty"), wantID: "new", wantTime: ts(now)},
				{name: "unknown secret", v: both, r: sign(s.attacker, now), wantErr: signature.ErrBadSignature},
				{name: "removed secret", v: s.verifier(t, s.both()[1]), r: sign(s.old, now), wantErr: signature.ErrBadSignature},
				{name: "remaining secret", v: s.verifier(t, s.both()[1]), r: sign(s.new, now), wantID: "new", wantTime: ts(now)},
			}
			if s.bodyExpect != nil {
				t.Logf("body cases: %s", s.bodyWhy)
			}
			empty := sign(s.new, now)
			empty.Header = http.Header{}
			if len(s.required) > 0 {
				cases = append(cases, tc{name: "empty headers", v: both, r: empty, wantErr: signature.ErrMissingHeader})
			} else { // mailgun: the signature is in the body, no header is read
				cases = append(cases, tc{name: "empty headers (signature in the body)", v: both, r: empty, wantID: "new", wantTime: ts(now)})
			}
			if s.cfg.PublicURL != "" {
				other := s.cfg
				other.PublicURL = suiteOtherURL
				cases = append(cases, tc{name: "signed for another URL", v: both, r: s.requestFor(t, other, s.new, now), wantErr: signature.ErrBadSignature})
				r := sign(s.new, now)
				r.RawQuery = strings.Replace(r.RawQuery, "tenant=7", "tenant=8", 1)
				cases = append(cases, tc{name: "query changed", v: both, r: r, wantErr: signature.ErrBadSignature})
			}
			for _, name := range s.required {
				r := sign(s.new, now)
				r.Header.Del(name)
				cases = append(cases, tc{name: "missing " + name, v: both, r: r, wantErr: signature.ErrMissingHeader})
				r = sign(s.new, now)
				r.Header.Set(name, "  ")
				cases = append(cases, tc{name: "blank " + name, v: both, r: r, wantErr: signature.ErrMissingHeader})
				r = sign(s.new, now)
				r.Header.Add(name, r.Header.Get(name))
				cases = append(cases, tc{name: "repeated " + name, v: both, r: r, wantErr: signature.ErrMalformedHeader})
				r = sign(s.new, now)
				r.Header.Set(name, " \t"+r.Header.Get(name)+" ")
				cases = append(cases, tc{name: "whitespace around " + name, v: both, r: r, wantID: "new", wantTime: ts(now)})
			}
			for _, m := range s.malformed {
				r := sign(s.new, now)
				r.Header.Set(m.header, m.value)
				cases = append(cases, tc{name: "malformed " + m.name, v: both, r: r, wantErr: signature.ErrMalformedHeader})
			}
			for _, x := range s.extra {
				r := sign(s.new, now)
				x.edit(t, s, r)
				cases = append(cases, tc{name: x.name, v: both, r: r, wantErr: x.want, wantID: "new", wantTime: ts(now)})
			}

			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res, err := c.v.Verify(cloneRequest(c.r), now)
					if c.wantErr == nil {
						if err != nil {
							t.Fatalf("Verify: unexpected error %v", err)
						}
						if res.SecretID != c.wantID {
							t.Errorf("SecretID = %q, want %q", res.SecretID, c.wantID)
						}
						if !res.Timestamp.Equal(c.wantTime) {
							t.Errorf("Timestamp = %v, want %v", res.Timestamp, c.wantTime)
						}
						if res.EventID != s.wantEventID {
							t.Errorf("EventID = %q, want %q", res.EventID, s.wantEventID)
						}
						return
					}
					if err == nil {
						t.Fatalf("Verify succeeded (%+v), want %v", res, c.wantErr)
					}
					if !errors.Is(err, c.wantErr) {
						t.Fatalf("Verify error %v, want %v", err, c.wantErr)
					}
					if !reflect.DeepEqual(res, signature.Result{}) {
						t.Errorf("failed Verify returned non-zero Result %+v", res)
					}
					assertExactlyOne(t, err)
					assertNoLeak(t, err.Error(), secrets, c.r.Header)
				})
			}
		})
	}
}

func assertExactlyOne(t *testing.T, err error) {
	t.Helper()
	n := 0
	for _, s := range []error{signature.ErrMissingHeader, signature.ErrMalformedHeader, signature.ErrStaleTimestamp, signature.ErrFutureTimestamp, signature.ErrBadSignature} {
		if errors.Is(err, s) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("error %v wraps %d sentinels, want exactly 1", err, n)
	}
	if signature.Reason(err) == "unknown" {
		t.Errorf("Reason(%v) = unknown", err)
	}
}

// TestCustomTolerance checks that Config.Tolerance replaces the default.
func TestCustomTolerance(t *testing.T) {
	for _, s := range schemes() {
		if s.tol == 0 {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			cfg := s.config(s.both()...)
			cfg.Tolerance = 10 * time.Second
			v, err := signature.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(s.request(t, s.new, now.Add(-10*time.Second)), now); err != nil {
				t.Errorf("10s old: %v", err)
			}
			if _, err := v.Verify(s.request(t, s.new, now.Add(-11*time.Second)), now); !errors.Is(err, signature.ErrStaleTimestamp) {
				t.Errorf("11s old: %v, want stale", err)
			}
			if _, err := v.Verify(s.request(t, s.new, now.Add(11*time.Second)), now); !errors.Is(err, signature.ErrFutureTimestamp) {
				t.Errorf("11s ahead: %v, want future", err)
			}
			// Sub-second clock: half a second later is inside the window.
			if _, err := v.Verify(s.request(t, s.new, now), now.Add(500*time.Millisecond)); err != nil {
				t.Errorf("half a second later: %v", err)
			}
		})
	}
}

// TestForgedStaleIsBadSignature: a forged request is reported as a bad
// signature even when its timestamp is also out of the window.
func TestForgedStaleIsBadSignature(t *testing.T) {
	for _, s := range schemes() {
		if s.tol == 0 {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			v := s.verifier(t, s.both()...)
			if _, err := v.Verify(s.request(t, s.attacker, now.Add(-time.Hour)), now); !errors.Is(err, signature.ErrBadSignature) {
				t.Fatalf("got %v, want bad signature", err)
			}
		})
	}
}

// A Request without Method is a POST, for the schemes that sign the method.
func TestEmptyMethodIsPOST(t *testing.T) {
	cfg := signature.Config{Scheme: "hubspot", PublicURL: "https://hooks.example.com/webhooks/hubspot",
		Secrets: []signature.Secret{{ID: "k", Value: []byte("hubspot-app-secret")}}}
	r := &signature.Request{Method: http.MethodPost, Header: http.Header{}, Body: []byte(`[{"objectId":1}]`)}
	if err := signature.SignRequest(cfg, []byte("hubspot-app-secret"), r, now, ""); err != nil {
		t.Fatal(err)
	}
	v, err := signature.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Method = ""
	if _, err := v.Verify(r, now); err != nil {
		t.Fatalf("empty method: %v", err)
	}
	r.Method = http.MethodPut
	if _, err := v.Verify(r, now); !errors.Is(err, signature.ErrBadSignature) {
		t.Fatalf("PUT: %v", err)
	}
}

// HubSpot's v3 signature covers the URI with twelve escapes decoded
// (developers.hubspot.com/docs/api/webhooks/validating-requests): a query
// holding %3A and %2f verifies against a signature computed over ':' and '/'.
func TestHubSpotSignsTheDecodedURI(t *testing.T) {
	const secret = "hubspot-client-secret"
	cfg := signature.Config{Scheme: "hubspot", PublicURL: "https://hooks.example.com/webhooks/hubspot",
		Secrets: []signature.Secret{{ID: "k", Value: []byte(secret)}}}
	v, err := signature.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body := `[{"objectId":1}]`
	ts := "1760000000000"
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("POST" + "https://hooks.example.com/webhooks/hubspot?at=10:00&next=/a,b%20c" + body + ts))
	h := http.Header{"X-Hubspot-Signature-V3": {base64.StdEncoding.EncodeToString(m.Sum(nil))}, "X-Hubspot-Request-Timestamp": {ts}}
	r := &signature.Request{Method: "POST", RawQuery: "at=10%3A00&next=%2fa%2Cb%20c", Header: h, Body: []byte(body)}
	if _, err := v.Verify(r, now); err != nil {
		t.Fatalf("decoded URI: %v", err)
	}
	r.RawQuery = "at=10%3A01&next=%2fa%2Cb%20c"
	if _, err := v.Verify(r, now); !errors.Is(err, signature.ErrBadSignature) {
		t.Fatalf("another query: %v", err)
	}
}

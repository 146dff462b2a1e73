package signature_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// TestVerifySchemes runs the same table against every scheme.
func TestVerifySchemes(t *testing.T) {
	for _, s := range schemes() {
		t.Run(s.name, func(t *testing.T) {
			both := s.verifier(t, s.both()...)
			secrets := []string{s.oldSecret, s.newSecret}

			type tc struct {
				name     string
				v        signature.Verifier
				h        http.Header
				body     string
				wantErr  error // nil = success
				wantID   string
				wantTime time.Time
			}
			ts := func(at time.Time) time.Time {
				if s.timestamped {
					return at
				}
				return time.Time{}
			}
			staleErr, futureErr := signature.ErrStaleTimestamp, signature.ErrFutureTimestamp
			if !s.timestamped {
				staleErr, futureErr = nil, nil // no timestamp: nothing to reject
			}
			cases := []tc{
				{name: "valid new secret", v: both, h: s.sign(t, s.newSecret, body, now), body: body, wantID: "new", wantTime: ts(now)},
				{name: "valid old secret during rotation", v: both, h: s.sign(t, s.oldSecret, body, now), body: body, wantID: "old", wantTime: ts(now)},
				{name: "exactly 300s old", v: both, h: s.sign(t, s.newSecret, body, now.Add(-300*time.Second)), body: body, wantID: "new", wantTime: ts(now.Add(-300 * time.Second))},
				{name: "exactly 300s ahead", v: both, h: s.sign(t, s.newSecret, body, now.Add(300*time.Second)), body: body, wantID: "new", wantTime: ts(now.Add(300 * time.Second))},
				{name: "301s old", v: both, h: s.sign(t, s.newSecret, body, now.Add(-301*time.Second)), body: body, wantErr: staleErr, wantID: "new", wantTime: ts(now.Add(-301 * time.Second))},
				{name: "301s ahead", v: both, h: s.sign(t, s.newSecret, body, now.Add(301*time.Second)), body: body, wantErr: futureErr, wantID: "new", wantTime: ts(now.Add(301 * time.Second))},
				{name: "one body byte changed", v: both, h: s.sign(t, s.newSecret, body, now), body: body[:len(body)-2] + "1}", wantErr: signature.ErrBadSignature},
				{name: "body re-serialised", v: both, h: s.sign(t, s.newSecret, body, now), body: reserialised, wantErr: signature.ErrBadSignature},
				{name: "empty body", v: both, h: s.sign(t, s.newSecret, body, now), body: "", wantErr: signature.ErrBadSignature},
				{name: "unknown secret", v: both, h: s.sign(t, s.attackerSecret(), body, now), body: body, wantErr: signature.ErrBadSignature},
				{name: "removed secret", v: s.verifier(t, s.both()[1]), h: s.sign(t, s.oldSecret, body, now), body: body, wantErr: signature.ErrBadSignature},
				{name: "remaining secret", v: s.verifier(t, s.both()[1]), h: s.sign(t, s.newSecret, body, now), body: body, wantID: "new", wantTime: ts(now)},
				{name: "empty headers", v: both, h: http.Header{}, body: body, wantErr: signature.ErrMissingHeader},
			}
			for _, name := range s.required {
				h := s.sign(t, s.newSecret, body, now)
				h.Del(name)
				cases = append(cases, tc{name: "missing " + name, v: both, h: h, body: body, wantErr: signature.ErrMissingHeader})
				h = s.sign(t, s.newSecret, body, now)
				h.Set(name, "  ")
				cases = append(cases, tc{name: "blank " + name, v: both, h: h, body: body, wantErr: signature.ErrMissingHeader})
				h = s.sign(t, s.newSecret, body, now)
				h.Add(name, h.Get(name))
				cases = append(cases, tc{name: "repeated " + name, v: both, h: h, body: body, wantErr: signature.ErrMalformedHeader})
				h = s.sign(t, s.newSecret, body, now)
				h.Set(name, " \t"+h.Get(name)+" ")
				cases = append(cases, tc{name: "whitespace around " + name, v: both, h: h, body: body, wantID: "new", wantTime: ts(now)})
			}
			for _, m := range s.malformed {
				h := s.sign(t, s.newSecret, body, now)
				h.Set(m.header, m.value)
				cases = append(cases, tc{name: "malformed " + m.name, v: both, h: h, body: body, wantErr: signature.ErrMalformedHeader})
			}

			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res, err := c.v.Verify(&signature.Request{Header: c.h, Body: []byte(c.body)}, now)
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
					if res != (signature.Result{}) {
						t.Errorf("failed Verify returned non-zero Result %+v", res)
					}
					assertExactlyOne(t, err)
					assertNoLeak(t, err.Error(), secrets, c.h, s.sigHeader)
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
		if !s.timestamped {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			cfg := s.config(s.both()...)
			cfg.Tolerance = 10 * time.Second
			v, err := signature.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(&signature.Request{Header: s.sign(t, s.newSecret, body, now.Add(-10*time.Second)), Body: []byte(body)}, now); err != nil {
				t.Errorf("10s old: %v", err)
			}
			if _, err := v.Verify(&signature.Request{Header: s.sign(t, s.newSecret, body, now.Add(-11*time.Second)), Body: []byte(body)}, now); !errors.Is(err, signature.ErrStaleTimestamp) {
				t.Errorf("11s old: %v, want stale", err)
			}
			if _, err := v.Verify(&signature.Request{Header: s.sign(t, s.newSecret, body, now.Add(11*time.Second)), Body: []byte(body)}, now); !errors.Is(err, signature.ErrFutureTimestamp) {
				t.Errorf("11s ahead: %v, want future", err)
			}
			// Sub-second clock: 300.5 s is beyond a 10 s window either way.
			if _, err := v.Verify(&signature.Request{Header: s.sign(t, s.newSecret, body, now), Body: []byte(body)}, now.Add(500*time.Millisecond)); err != nil {
				t.Errorf("half a second later: %v", err)
			}
		})
	}
}

// TestForgedStaleIsBadSignature: a forged request is reported as a bad
// signature even when its timestamp is also out of the window.
func TestForgedStaleIsBadSignature(t *testing.T) {
	for _, s := range schemes() {
		if !s.timestamped {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			v := s.verifier(t, s.both()...)
			h := s.sign(t, s.attackerSecret(), body, now.Add(-time.Hour))
			if _, err := v.Verify(&signature.Request{Header: h, Body: []byte(body)}, now); !errors.Is(err, signature.ErrBadSignature) {
				t.Fatalf("got %v, want bad signature", err)
			}
		})
	}
}

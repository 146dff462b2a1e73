package signature

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"maps"
	"math/rand"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each parser fuzz target asserts: no panic, and any accepted input
// round-trips through the canonical formatter to the same parse.

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"0", "1760000000", "01", "-5", "+5", "1e9", "999999999999999999", "9999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseTimestamp(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("negative timestamp %d from %q", n, s)
		}
		if got := strconv.FormatInt(n, 10); got != s {
			t.Fatalf("parse(%q) = %d, formats as %q", s, n, got)
		}
	})
}

// FuzzParseParts covers the declarative key=value header parser with the
// shapes of Stripe (","), Paddle (";") and Calendly: any accepted header
// holds 1..maxCandidates signatures of the digest's size and a timestamp,
// and its canonical form parses to the same values.
func FuzzParseParts(f *testing.F) {
	sig := strings.Repeat("ab", 32)
	for _, s := range []string{
		"t=1760000000,v1=" + sig,
		"t=1760000000,v1=" + sig + ",v1=" + strings.ToUpper(sig) + ",v0=" + sig,
		" t = 1 , v1 = " + sig + " ",
		"ts=1671552777;h1=" + sig, "ts=1;h1=" + sig + ";h1=zz",
		"t=1,t=2,v1=" + sig, "v1=" + sig, "t=1", "t=1,v1=zz", "t=1,,v1=" + sig, "=,=", "t=1,x=a=b,v1=" + sig,
	} {
		f.Add(s)
	}
	var vs []*hmacVerifier
	for _, name := range []string{"stripe", "paddle", "calendly"} {
		v, err := newHMACVerifier(presets[name], nil, 0, "")
		if err != nil {
			f.Fatal(err)
		}
		vs = append(vs, v)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range vs {
			ts, sigs, err := v.parseParts(s)
			if err != nil {
				if strings.Contains(err.Error(), sig) {
					t.Fatalf("error leaks signature: %v", err)
				}
				continue
			}
			if len(sigs) == 0 || len(sigs) > maxCandidates || ts == "" {
				t.Fatalf("accepted inconsistent parse %q %d from %q", ts, len(sigs), s)
			}
			parts := []string{v.spec.Timestamp.Part + "=" + ts}
			for _, g := range sigs {
				if len(g) != v.size {
					t.Fatalf("signature of %d bytes from %q", len(g), s)
				}
				parts = append(parts, v.spec.SignatureKey+"="+hex.EncodeToString(g))
			}
			canon := strings.Join(parts, v.spec.PartSeparator)
			ts2, sigs2, err := v.parseParts(canon)
			if err != nil || ts2 != ts || len(sigs2) != len(sigs) {
				t.Fatalf("canonical form %q of %q: %q %d %v", canon, s, ts2, len(sigs2), err)
			}
		}
	})
}

func FuzzParseStandardWebhooksHeader(f *testing.F) {
	sig := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	for _, s := range []string{
		"v1," + sig, "v1," + sig + " v1a,abc v2,x", "  v1," + sig + "\t", "v1,", ",abc", "v1", "v1,AAAA", "v1a,xyz",
		"v1," + strings.TrimRight(sig, "="), "v1," + sig + ",extra",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sigs, err := parseStandardSignatures(s)
		if err != nil {
			return
		}
		if len(sigs) == 0 || len(sigs) > maxCandidates {
			t.Fatalf("accepted %d signatures from %q", len(sigs), s)
		}
		for _, v := range sigs {
			if len(v) != 32 {
				t.Fatalf("signature of %d bytes from %q", len(v), s)
			}
		}
		canon := formatStandardSignatures(sigs)
		again, err := parseStandardSignatures(canon)
		if err != nil || formatStandardSignatures(again) != canon {
			t.Fatalf("round trip of %q via %q failed: %v", s, canon, err)
		}
	})
}

// fuzzPrefixedHex covers the "prefix=<hex>" parsers (github, slack).
func fuzzPrefixedHex(f *testing.F, prefix string, parse func(string) ([]byte, error)) {
	sig := strings.Repeat("0f", 32)
	for _, s := range []string{prefix + sig, prefix + strings.ToUpper(sig), " " + prefix + sig + " ", sig, prefix, prefix + "xyz", "sha1=" + sig, "v1=" + sig} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parse(s)
		if err != nil {
			return
		}
		canon := prefix + hex.EncodeToString(b)
		if !strings.EqualFold(trim(s), canon) {
			t.Fatalf("parse(%q) accepted, canonical %q differs", s, canon)
		}
		again, err := parse(canon)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip of %q failed: %v", s, err)
		}
	})
}

func FuzzParseGitHubSignature(f *testing.F) {
	fuzzPrefixedHex(f, githubSigPrefix, parseGitHubSignature)
}

func FuzzParseSlackSignature(f *testing.F) {
	v, err := newHMACVerifier(presets["slack"], nil, 0, "")
	if err != nil {
		f.Fatal(err)
	}
	fuzzPrefixedHex(f, "v0=", v.decodePrefixed)
}

func FuzzParseReferenceSignature(f *testing.F) { fuzzPrefixedHex(f, "", parseHexSHA256) }

func FuzzParseShopifyHmac(f *testing.F) {
	sig := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xfe}, 32))
	for _, s := range []string{sig, strings.TrimRight(sig, "="), sig[:20] + "\n" + sig[20:], "AAAA", strings.Repeat("ab", 32), sig[:42] + "B="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseBase64SHA256(s)
		if err != nil {
			return
		}
		if len(b) != 32 || base64.StdEncoding.EncodeToString(b) != s {
			t.Fatalf("parse(%q) accepted a non-canonical encoding", s)
		}
	})
}

// FuzzVerify drives every scheme's Verify with arbitrary header values
// and bodies: it must never panic, every failure must wrap exactly one
// sentinel, and no error may contain a secret.
func FuzzVerify(f *testing.F) {
	at := time.Unix(1_760_000_000, 0)
	cases := fuzzSchemes(f)
	for i, c := range cases {
		var vals [4]string
		for j, k := range c.names {
			vals[j] = c.signed.Get(k)
		}
		f.Add(uint8(i), vals[0], vals[1], vals[2], vals[3], c.body)
	}
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d string, body []byte) {
		sc := cases[int(which)%len(cases)]
		h := http.Header{}
		for j, v := range []string{a, b, c, d}[:len(sc.names)] {
			h.Set(sc.names[j], v)
		}
		res, err := sc.v.Verify(&Request{Header: h, Body: body, RawQuery: sc.query}, at)
		if err == nil {
			if res.SecretID != "k" {
				t.Fatalf("accepted with SecretID %q", res.SecretID)
			}
			return
		}
		n := 0
		for _, s := range []error{ErrMissingHeader, ErrMalformedHeader, ErrStaleTimestamp, ErrFutureTimestamp, ErrBadSignature} {
			if errors.Is(err, s) {
				n++
			}
		}
		if n != 1 || Reason(err) == "unknown" {
			t.Fatalf("%s: error %v wraps %d sentinels", sc.name, err, n)
		}
		if strings.Contains(err.Error(), sc.secret) || strings.Contains(err.Error(), "Zm0Rz9h1") {
			t.Fatalf("%s: error leaks the secret: %v", sc.name, err)
		}
	})
}

type fuzzScheme struct {
	name, secret, query string
	v                   Verifier
	signed              http.Header
	names               []string
	body                []byte
}

// fuzzSchemes signs one request per scheme (every preset and code scheme)
// and checks that it verifies: the seeds of FuzzVerify.
func fuzzSchemes(f *testing.F) []fuzzScheme {
	const secret = "whsec_Zm0Rz9h1ZnV6ei1zZWNyZXQtdmFsdWU="
	at := time.Unix(1_760_000_000, 0)
	var out []fuzzScheme
	for _, name := range Schemes() {
		cfg := Config{Scheme: name, PublicURL: "https://hooks.example.com/webhooks/x"}
		verify, sign := secret, secret
		body := []byte(`{"a":1,"webhookTimestamp":1760000000000}`)
		switch name {
		case "reference":
			cfg.TimestampHeader, cfg.SignatureHeader = "X-Ts", "X-Sig"
		case "hmac":
			cfg.HMAC = &HMAC{Header: "X-Sig", PartSeparator: ",", SignatureKey: "s", Timestamp: TimestampSource{Part: "t"}, Content: "{timestamp}|{body}"}
		case "discord":
			sign = strings.Repeat("07", 32)
			verify = hex.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey))
		case "sendgrid":
			sign, verify = testECDSAKeys(f)
		case "postmark":
			verify, sign = "user:"+secret, "user:"+secret
		}
		cfg.Secrets = []Secret{{ID: "k", Value: []byte(verify)}}
		v, err := New(cfg)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		r := &Request{Header: http.Header{}, Body: body}
		if err := SignRequest(cfg, []byte(sign), r, at, "1:evt"); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		if _, err := v.Verify(r, at); err != nil {
			f.Fatalf("%s: seed does not verify: %v", name, err)
		}
		names := slices.Sorted(maps.Keys(r.Header))
		if len(names) > 4 {
			f.Fatalf("%s: %d headers", name, len(names))
		}
		out = append(out, fuzzScheme{name: name, secret: verify, query: r.RawQuery, v: v, signed: r.Header, names: names, body: r.Body})
	}
	return out
}

// testECDSAKeys returns a fixed P-256 key pair: PKCS #8 and PKIX, base64 DER.
func testECDSAKeys(tb testing.TB) (priv, pub string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.New(rand.NewSource(1)))
	if err != nil {
		tb.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		tb.Fatal(err)
	}
	pk, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(p8), base64.StdEncoding.EncodeToString(pk)
}

package signature

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"maps"
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

func FuzzParseStripeHeader(f *testing.F) {
	sig := strings.Repeat("ab", 32)
	for _, s := range []string{
		"t=1760000000,v1=" + sig,
		"t=1760000000,v1=" + sig + ",v1=" + strings.ToUpper(sig) + ",v0=" + sig,
		" t = 1 , v1 = " + sig + " ",
		"t=1,t=2,v1=" + sig, "v1=" + sig, "t=1", "t=1,v1=zz", "t=1,,v1=" + sig, "=,=", "t=1,x=a=b,v1=" + sig,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := parseStripeHeader(s)
		if err != nil {
			if strings.Contains(err.Error(), sig) {
				t.Fatalf("error leaks signature: %v", err)
			}
			return
		}
		if len(sh.v1) == 0 || len(sh.v1) > maxCandidates || sh.timestamp < 0 {
			t.Fatalf("accepted inconsistent parse %+v from %q", sh, s)
		}
		for _, v := range sh.v1 {
			if len(v) != 32 {
				t.Fatalf("v1 of %d bytes from %q", len(v), s)
			}
		}
		again, err := parseStripeHeader(sh.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", sh.String(), s, err)
		}
		if again.String() != sh.String() {
			t.Fatalf("round trip %q -> %q", sh.String(), again.String())
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

func FuzzParseSlackSignature(f *testing.F) { fuzzPrefixedHex(f, slackVersion+"=", parseSlackSignature) }

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

// FuzzVerify drives every scheme's Verify with arbitrary header values:
// it must never panic, every failure must wrap exactly one sentinel, and
// no error may contain a secret.
func FuzzVerify(f *testing.F) {
	const secret = "whsec_Zm0Rz9h1ZnV6ei1zZWNyZXQtdmFsdWU="
	at := time.Unix(1_760_000_000, 0)
	cfgs := []Config{
		{Scheme: "reference", TimestampHeader: "X-Ts", SignatureHeader: "X-Sig"},
		{Scheme: "stripe"}, {Scheme: "github"}, {Scheme: "slack"}, {Scheme: "standard-webhooks"}, {Scheme: "shopify"},
	}
	// The fuzzed values go to each scheme's headers in sorted order, the
	// order in which the seeds below are produced.
	headerNames := [][]string{
		{"X-Sig", "X-Ts"},
		{"Stripe-Signature"},
		{"X-Github-Delivery", "X-Github-Hook-Id", "X-Hub-Signature-256"},
		{"X-Slack-Request-Timestamp", "X-Slack-Signature"},
		{"Webhook-Id", "Webhook-Signature", "Webhook-Timestamp"},
		{"X-Shopify-Hmac-Sha256", "X-Shopify-Webhook-Id"},
	}
	verifiers := make([]Verifier, len(cfgs))
	for i, c := range cfgs {
		c.Secrets = []Secret{{ID: "k", Value: []byte(secret)}}
		v, err := New(c)
		if err != nil {
			f.Fatal(err)
		}
		verifiers[i] = v
		h, err := Sign(c, []byte(secret), []byte(`{"a":1}`), at, "1:evt")
		if err != nil {
			f.Fatal(err)
		}
		keys := slices.Sorted(maps.Keys(h))
		if !slices.Equal(keys, headerNames[i]) {
			f.Fatalf("%s: Sign produced %v, want %v", c.Scheme, keys, headerNames[i])
		}
		if _, err := v.Verify(h, []byte(`{"a":1}`), at); err != nil {
			f.Fatalf("%s: seed does not verify: %v", c.Scheme, err)
		}
		var vals [3]string
		for j, k := range keys {
			vals[j] = h.Get(k)
		}
		f.Add(uint8(i), vals[0], vals[1], vals[2], []byte(`{"a":1}`))
	}
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string, body []byte) {
		i := int(which) % len(cfgs)
		names := headerNames[i]
		h := http.Header{}
		for j, v := range []string{a, b, c}[:len(names)] {
			h.Set(names[j], v)
		}
		res, err := verifiers[i].Verify(h, body, at)
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
			t.Fatalf("error %v wraps %d sentinels", err, n)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Zm0Rz9h1") {
			t.Fatalf("error leaks the secret: %v", err)
		}
	})
}

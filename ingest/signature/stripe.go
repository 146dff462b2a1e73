package signature

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const stripeHeader = "Stripe-Signature"

// stripeVerifier implements Stripe's scheme:
// Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…], each v1 being
// hex(HMAC-SHA256(whole "whsec_…" secret, "<t>.<raw body>")).
type stripeVerifier struct {
	keys []key
	tol  time.Duration
}

func (v *stripeVerifier) Verify(h http.Header, body []byte, now time.Time) (Result, error) {
	text, err := header(h, stripeHeader)
	if err != nil {
		return Result{}, err
	}
	sh, err := parseStripeHeader(text)
	if err != nil {
		return Result{}, malformed(stripeHeader, err.Error())
	}
	ts := strconv.FormatInt(sh.timestamp, 10)
	id, ok := match(v.keys, sh.v1, []byte(ts), []byte("."), body)
	if !ok {
		return Result{}, badSignature()
	}
	t := time.Unix(sh.timestamp, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: id, Timestamp: t}, nil
}

// stripeSigHeader is a parsed Stripe-Signature header.
type stripeSigHeader struct {
	timestamp int64
	v1        [][]byte // decoded v1 signatures, in header order
}

// String formats sh canonically ("t=…,v1=…,v1=…").
func (sh stripeSigHeader) String() string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(sh.timestamp, 10))
	for _, s := range sh.v1 {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(s))
	}
	return b.String()
}

// parseStripeHeader parses "t=<unix>,v1=<hex>,…": comma-separated key=value
// pairs (whitespace around each pair and around '=' tolerated), exactly one
// t, at least one usable v1 (64 hex digits; other v1 values are skipped, as
// stripe-go skips them); other keys (v0, future schemes) are ignored but
// must still be key=value, as stripe-go requires. Error texts never contain
// the header's content.
func parseStripeHeader(s string) (stripeSigHeader, error) {
	var sh stripeSigHeader
	seenT := false
	for _, pair := range strings.Split(s, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k, val = trim(k), trim(val)
		if !ok || k == "" {
			return stripeSigHeader{}, errors.New("want comma-separated key=value pairs")
		}
		switch k {
		case "t":
			if seenT {
				return stripeSigHeader{}, errors.New("repeated t=")
			}
			seenT = true
			ts, err := parseTimestamp(val)
			if err != nil {
				return stripeSigHeader{}, errors.New("t= is not a Unix timestamp in seconds")
			}
			sh.timestamp = ts
		case "v1":
			// As stripe-go: a v1 value that is not a SHA-256 in hex is
			// skipped, not fatal (a sender's extra entry must not cost a
			// genuine event).
			sig, err := parseHexSHA256(val)
			if err != nil {
				continue
			}
			if len(sh.v1) == maxCandidates {
				return stripeSigHeader{}, errors.New("too many v1 signatures")
			}
			sh.v1 = append(sh.v1, sig)
		}
	}
	if !seenT {
		return stripeSigHeader{}, errors.New("no t= timestamp")
	}
	if len(sh.v1) == 0 {
		return stripeSigHeader{}, errors.New("no usable v1= signature (64 hex digits)")
	}
	return sh, nil
}

package signature

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Sign produces the signature headers a provider using cfg.Scheme would send
// for body at time now, signed with secret (in the same form as
// Config.Secrets[i].Value, except for the asymmetric schemes, which take
// the private key: discord an Ed25519 seed in hex, sendgrid a PKCS #8 ECDSA
// key in base64 DER). cfg.Secrets and cfg.Tolerance are not used. It is
// meant for tests, the curl command printed by `make run` and benchmarks.
// Schemes that sign the URL or place the signature in the body need
// SignRequest.
//
// eventID is required by the schemes that carry an event id in headers and
// ignored by the others:
//   - github: "<hook id>:<delivery GUID>" sets X-GitHub-Hook-ID and
//     X-GitHub-Delivery; without ':' only X-GitHub-Delivery is set;
//   - standard-webhooks: webhook-id (which is also signed);
//   - an HMAC scheme with an id header (shopify, twitch).
//
// Whatever Sign produces, Verify of a verifier holding secret accepts at
// time now and reports eventID as Result.EventID where the scheme has one.
// Only signature-related headers are set (no Content-Type).
func Sign(cfg Config, secret []byte, body []byte, now time.Time, eventID string) (http.Header, error) {
	r := &Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
	if err := SignRequest(cfg, secret, r, now, eventID); err != nil {
		return nil, err
	}
	return r.Header, nil
}

// SignRequest is Sign for a whole request: it sets r's signature headers
// and, where the scheme requires it, r.RawQuery (twilio's bodySHA256 for a
// JSON body) or r.Body (mailgun's signature object). r.Header must not be
// nil; a form body is recognised by r's Content-Type.
func SignRequest(cfg Config, secret []byte, r *Request, now time.Time, eventID string) error {
	sc, err := resolve(cfg)
	if err != nil {
		return err
	}
	if len(secret) == 0 {
		return fmt.Errorf("signature: sign %q: empty secret value", cfg.Scheme)
	}
	if now.Unix() < 0 {
		return errors.New("signature: sign: time before the Unix epoch")
	}
	if err := sc.sign(secret, r, now, eventID); err != nil {
		return fmt.Errorf("signature: sign %q: %w", cfg.Scheme, err)
	}
	return nil
}

// signHMAC signs r under an HMAC definition.
func signHMAC(spec HMAC, url string, secret []byte, r *Request, now time.Time, eventID string) error {
	k, err := hmacKey(spec, secret)
	if err != nil {
		return err
	}
	hf, _, _ := hashFor(spec.Algorithm)
	content, _ := providers.ParseContent(spec.Content)
	var s signed
	switch spec.Timestamp.Format {
	case "unix_ms":
		s.tsText = strconv.FormatInt(now.UnixMilli(), 10)
	case "rfc3339":
		s.tsText = now.UTC().Format(time.RFC3339Nano)
	default:
		s.tsText = strconv.FormatInt(now.Unix(), 10)
	}
	if spec.IDHeader != "" {
		if !validEventID(eventID) {
			return errors.New("event id must be 1 to 255 visible ASCII characters")
		}
		s.eventID = eventID
		r.Header.Set(spec.IDHeader, eventID)
	}
	v := &hmacVerifier{spec: spec, content: content, publicURL: url}
	m := hmac.New(hf, k)
	v.writeContent(m, r, s)
	sig := m.Sum(nil)
	enc := hex.EncodeToString(sig)
	if spec.Encoding == "base64" {
		enc = base64.StdEncoding.EncodeToString(sig)
	}
	if spec.Timestamp.Header != "" {
		r.Header.Set(spec.Timestamp.Header, s.tsText)
	}
	if spec.PartSeparator == "" {
		r.Header.Set(spec.Header, spec.Prefix+enc)
		return nil
	}
	var parts []string
	if spec.Timestamp.Part != "" {
		parts = append(parts, spec.Timestamp.Part+"="+s.tsText)
	}
	parts = append(parts, spec.SignatureKey+"="+enc)
	r.Header.Set(spec.Header, strings.Join(parts, spec.PartSeparator))
	return nil
}

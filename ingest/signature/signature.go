// Package signature verifies webhook signatures of the providers gatehouse
// accepts: a declarative HMAC scheme (with presets for most providers),
// and code for the schemes that differ (GitHub, Standard Webhooks, Discord
// Ed25519, SendGrid ECDSA, Twilio URL signatures, Mailgun body signatures,
// GitLab and Postmark shared tokens).
//
// It is pure: no I/O, no clock, no globals. The caller passes the raw request
// headers, the exact raw body bytes and the current time. Every comparison of
// a signature is constant time (hmac.Equal) and every active secret is tried
// against every candidate signature without stopping at the first mismatch,
// so that secrets can be rotated with an overlap during which both verify.
//
// Order of checks: required headers are looked up first (ErrMissingHeader),
// then parsed strictly (ErrMalformedHeader), then the signature is checked
// (ErrBadSignature) and only an authentic timestamp is compared with the
// tolerance window (ErrStaleTimestamp, ErrFutureTimestamp). A stale or future
// reason therefore always means "genuinely signed but replayed or clock skew",
// never "forged".
//
// Error messages may name a header but never contain a header value, a
// signature or a secret.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Scheme names with code of their own; every other name is a preset of
// the declarative HMAC scheme (see Preset) or "hmac" itself.
const (
	schemeReference        = "reference"
	schemeGitHub           = "github"
	schemeStandardWebhooks = "standard-webhooks"
	schemeHMAC             = "hmac"
)

// defaultTolerance is the tolerance of the schemes without one of their
// own, used when Config.Tolerance is zero.
const defaultTolerance = 300 * time.Second

// maxCandidates bounds how many usable signatures one header may carry
// (more is refused as a malformed header). Entries a parser cannot use are
// skipped, not fatal, as the providers' own libraries do: Stripe v1 values
// that are not 64 hex digits (stripe-go), Standard Webhooks entries without
// a comma, of another version or not base64 of 32 bytes (the Standard
// Webhooks libraries). A header with no usable entry is still malformed.
// GitHub, Slack and Shopify send one signature per header, and their
// libraries accept exactly one.
const maxCandidates = 32

// Secret is one active signing secret of an endpoint (for the asymmetric
// schemes, one trusted public key). ID is an operator-chosen label (never
// the value) used in metrics and logs.
type Secret struct {
	ID    string
	Value []byte
}

// Config configures one provider endpoint's verifier.
type Config struct {
	// Scheme is one of Schemes(): a scheme with code of its own, a preset
	// of the declarative HMAC scheme, or "hmac" with HMAC set.
	Scheme string
	// Secrets are the active secrets (more than one during a rotation
	// overlap); at least one is required. An empty ID defaults to the
	// secret's index ("0", "1", …); IDs must be unique. For
	// standard-webhooks the value is "whsec_<base64>" or bare base64; for
	// stripe it is the whole "whsec_…" string, used as raw HMAC key bytes;
	// for discord the application's public key in hex; for sendgrid the
	// verification key (base64 DER, as SendGrid shows it); for postmark
	// "user:password" of the webhook URL's basic auth.
	Secrets []Secret
	// Tolerance is the allowed distance between the signed timestamp and
	// now, in both directions. 0 means the scheme's default (300 s unless
	// Describe says otherwise). Ignored by schemes without a timestamp.
	// Negative is an error.
	Tolerance time.Duration
	// TimestampHeader names the header carrying Unix seconds (reference
	// scheme only, required there).
	TimestampHeader string
	// SignatureHeader names the header carrying the hex signature
	// (reference scheme only, required there).
	SignatureHeader string
	// HMAC is the declarative scheme's definition (Scheme "hmac" only).
	HMAC *HMAC
	// PublicURL is the URL the provider calls, exactly as configured at
	// the provider (scheme, host, port, path; no query). Schemes that sign
	// the URL (twilio, square, hubspot, an hmac content with {url})
	// require it; the query string of each request is appended as
	// received. The request's Host and X-Forwarded-* headers are never
	// used: they are the caller's to choose.
	PublicURL string
}

// Request is what a verifier sees of one delivery.
type Request struct {
	// Method is the request method ("POST" when empty).
	Method string
	// RawQuery is the request's query string as received, without '?'.
	RawQuery string
	Header   http.Header
	// Body is the exact raw body.
	Body []byte
}

func (r *Request) method() string {
	if r.Method == "" {
		return http.MethodPost
	}
	return r.Method
}

// Result of a successful verification.
type Result struct {
	// SecretID is the ID of the secret that matched.
	SecretID string
	// Timestamp is the signed timestamp, zero for schemes without one.
	Timestamp time.Time
	// EventID is the event id carried in headers when the scheme defines
	// one: github "<X-GitHub-Hook-ID>:<X-GitHub-Delivery>" (or just the
	// delivery GUID without a hook id), shopify X-Shopify-Webhook-Id,
	// standard-webhooks webhook-id, twitch Twitch-Eventsub-Message-Id, an
	// hmac scheme's id_header; "" otherwise.
	EventID string
	// Nonce is the signed single-use value of a scheme whose signature
	// does not cover the event (Mailgun's signature.token): the receiver
	// records it for the replay window and refuses it when seen again.
	Nonce string
	// Form is the form body's parameters when the scheme parsed them to
	// verify it (Twilio), so the envelope does not parse them again; nil
	// otherwise. Read only.
	Form url.Values
}

// Verifier verifies one provider endpoint's requests. Verifiers returned by
// New are immutable and safe for concurrent use.
type Verifier interface {
	// Verify checks r (its exact raw body) at time now. Errors wrap
	// exactly one of ErrMissingHeader, ErrMalformedHeader,
	// ErrStaleTimestamp, ErrFutureTimestamp, ErrBadSignature.
	Verify(r *Request, now time.Time) (Result, error)
}

// Sentinel errors wrapped by Verify; see Reason for their labels.
var (
	ErrMissingHeader   = errors.New("missing header")
	ErrMalformedHeader = errors.New("malformed header")
	ErrStaleTimestamp  = errors.New("stale timestamp")
	ErrFutureTimestamp = errors.New("future timestamp")
	ErrBadSignature    = errors.New("bad signature")
)

// Reason classifies err for metrics and logs: "missing_header",
// "malformed_header", "stale_timestamp", "future_timestamp",
// "bad_signature", or "unknown" for anything else (including nil).
func Reason(err error) string {
	switch {
	case err == nil:
		return "unknown"
	case errors.Is(err, ErrMissingHeader):
		return "missing_header"
	case errors.Is(err, ErrMalformedHeader):
		return "malformed_header"
	case errors.Is(err, ErrStaleTimestamp):
		return "stale_timestamp"
	case errors.Is(err, ErrFutureTimestamp):
		return "future_timestamp"
	case errors.Is(err, ErrBadSignature):
		return "bad_signature"
	default:
		return "unknown"
	}
}

// key is a secret prepared for the scheme (decoded where it requires it).
type key struct {
	id    string
	value []byte
}

// New validates cfg and returns the Verifier for its scheme. It returns a
// descriptive error for an unknown scheme, no secrets, an empty secret value,
// duplicate secret IDs, a negative tolerance, an invalid HMAC definition,
// missing or invalid header names for the reference scheme (or header names
// set for another scheme), a missing PublicURL where the scheme signs the
// URL, and a secret or key the scheme cannot decode. Errors never contain a
// secret value.
func New(cfg Config) (Verifier, error) {
	sc, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Secrets) == 0 {
		return nil, fmt.Errorf("signature: scheme %q: at least one secret is required", cfg.Scheme)
	}
	if cfg.Tolerance < 0 {
		return nil, fmt.Errorf("signature: scheme %q: negative tolerance %s", cfg.Scheme, cfg.Tolerance)
	}
	tol := cfg.Tolerance
	if tol == 0 {
		tol = sc.tolerance
	}
	keys := make([]key, 0, len(cfg.Secrets))
	seen := make(map[string]bool, len(cfg.Secrets))
	for i, s := range cfg.Secrets {
		id := s.ID
		if id == "" {
			id = strconv.Itoa(i)
		}
		if seen[id] {
			return nil, fmt.Errorf("signature: scheme %q: duplicate secret id %q", cfg.Scheme, id)
		}
		seen[id] = true
		if len(s.Value) == 0 {
			return nil, fmt.Errorf("signature: scheme %q: secret %q: empty secret value", cfg.Scheme, id)
		}
		v, err := sc.key(s.Value)
		if err != nil {
			return nil, fmt.Errorf("signature: scheme %q: secret %q: %w", cfg.Scheme, id, err)
		}
		keys = append(keys, key{id: id, value: v})
	}
	v, err := sc.verifier(keys, tol)
	if err != nil {
		return nil, fmt.Errorf("signature: scheme %q: %w", cfg.Scheme, err)
	}
	return v, nil
}

// isToken reports whether s is a non-empty RFC 7230 token (a header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// macSHA256 returns HMAC-SHA256(k, parts[0] || parts[1] || …).
func macSHA256(k []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, k)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// match computes the MAC of parts under every key and compares it, in
// constant time, with every candidate. It never stops early: all keys and
// all candidates are always examined. It returns the ID of the first key
// (in configuration order) that matched any candidate.
func match(keys []key, candidates [][]byte, parts ...[]byte) (string, bool) {
	return matchWith(sha256.New, keys, candidates, func(m hash.Hash) {
		for _, p := range parts {
			m.Write(p)
		}
	})
}

package signature

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// scheme is everything New and Sign need of one scheme.
type scheme struct {
	tolerance time.Duration
	// key decodes a configured secret (or public key).
	key func(value []byte) ([]byte, error)
	// verifier builds the Verifier from decoded keys.
	verifier func(keys []key, tol time.Duration) (Verifier, error)
	// sign sets what a sender using secret (the signing form: a private
	// key for the asymmetric schemes) puts on r at now.
	sign func(secret []byte, r *Request, now time.Time, eventID string) error
	// describe is the one-line account of the scheme for `gatehouse providers`.
	describe Description
}

// Description says, for people, how a scheme signs.
type Description struct {
	// Headers the provider sends that the verifier reads.
	Headers []string
	// Content is what is signed and how ("HMAC-SHA256 hex of {timestamp}.{body}").
	Content string
	// Timestamp is where the signed timestamp is and its window, "" if none.
	Timestamp string
}

func rawKey(v []byte) ([]byte, error) { return append([]byte(nil), v...), nil }

// codeSchemes are the schemes whose rules are code, not an HMAC definition.
var codeSchemes = map[string]func(cfg Config) (scheme, error){
	schemeGitHub:           githubScheme,
	schemeStandardWebhooks: standardScheme,
	"discord":              discordScheme,
	"sendgrid":             sendgridScheme,
	"twilio":               twilioScheme,
	"mailgun":              mailgunScheme,
	"gitlab":               gitlabScheme,
	"postmark":             postmarkScheme,
}

// Schemes lists every scheme name New accepts, sorted.
func Schemes() []string {
	out := []string{schemeHMAC, schemeReference}
	for n := range codeSchemes {
		out = append(out, n)
	}
	for n := range presets {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// NeedsPublicURL reports whether scheme signs the URL the provider called
// (the catalogue's SignsURL says the same, and a test holds them together).
func NeedsPublicURL(scheme string, h *HMAC) bool {
	switch scheme {
	case "twilio":
		return true
	case schemeHMAC:
		return h != nil && h.Uses(providers.PartURL)
	}
	p, ok := presets[scheme]
	return ok && p.Uses(providers.PartURL)
}

// Describe returns how scheme signs (h for "hmac"), or false for an
// unknown scheme.
func Describe(name string, h *HMAC) (Description, bool) {
	cfg := Config{Scheme: name, HMAC: h, PublicURL: "https://example.invalid/"}
	if name == schemeReference {
		cfg.TimestampHeader, cfg.SignatureHeader = "timestamp_header", "signature_header"
	}
	sc, err := resolve(cfg)
	if err != nil {
		return Description{}, false
	}
	return sc.describe, true
}

// resolve validates everything in cfg except the secrets and returns its
// scheme.
func resolve(cfg Config) (scheme, error) {
	if cfg.Scheme != schemeReference && (cfg.TimestampHeader != "" || cfg.SignatureHeader != "") {
		return scheme{}, fmt.Errorf("signature: scheme %q: TimestampHeader and SignatureHeader are only used by the reference scheme", cfg.Scheme)
	}
	if cfg.Scheme != schemeHMAC && cfg.HMAC != nil {
		return scheme{}, fmt.Errorf("signature: scheme %q: an HMAC definition is only used by the hmac scheme", cfg.Scheme)
	}
	switch name := cfg.Scheme; {
	case name == "":
		return scheme{}, fmt.Errorf("signature: scheme is required (one of %s)", strings.Join(Schemes(), ", "))
	case name == schemeReference:
		if cfg.TimestampHeader == "" || cfg.SignatureHeader == "" {
			return scheme{}, errors.New("signature: scheme \"reference\" requires TimestampHeader and SignatureHeader")
		}
		for _, h := range []string{cfg.TimestampHeader, cfg.SignatureHeader} {
			if !isToken(h) {
				return scheme{}, fmt.Errorf("signature: TimestampHeader or SignatureHeader %q is not a valid header name", h)
			}
		}
		if http.CanonicalHeaderKey(cfg.TimestampHeader) == http.CanonicalHeaderKey(cfg.SignatureHeader) {
			return scheme{}, errors.New("signature: TimestampHeader and SignatureHeader must differ")
		}
		spec := HMAC{Header: cfg.SignatureHeader, Content: "{timestamp}.{body}", Timestamp: TimestampSource{Header: cfg.TimestampHeader}}
		return hmacScheme(spec, defaultTolerance, cfg.PublicURL)
	case name == schemeHMAC:
		if cfg.HMAC == nil {
			return scheme{}, errors.New("signature: scheme \"hmac\" requires an HMAC definition")
		}
		return hmacScheme(*cfg.HMAC, defaultTolerance, cfg.PublicURL)
	default:
		if p, ok := presets[name]; ok {
			k, _ := providers.Lookup(name)
			return hmacScheme(p, k.ReplayWindow(), cfg.PublicURL)
		}
		if f, ok := codeSchemes[name]; ok {
			return f(cfg)
		}
		return scheme{}, fmt.Errorf("signature: unknown scheme %q (want one of %s)", name, strings.Join(Schemes(), ", "))
	}
}

// hmacScheme is the scheme of one HMAC definition.
func hmacScheme(spec HMAC, tol time.Duration, url string) (scheme, error) {
	if err := spec.Validate(url); err != nil {
		return scheme{}, fmt.Errorf("signature: hmac: %w", err)
	}
	sc := scheme{
		tolerance: tol,
		key:       func(v []byte) ([]byte, error) { return hmacKey(spec, v) },
		verifier: func(keys []key, tol time.Duration) (Verifier, error) {
			return newHMACVerifier(spec, keys, tol, url)
		},
		sign: func(secret []byte, r *Request, now time.Time, eventID string) error {
			return signHMAC(spec, url, secret, r, now, eventID)
		},
	}
	sc.describe = describeHMAC(spec, tol)
	return sc, nil
}

func describeHMAC(spec HMAC, tol time.Duration) Description {
	alg := strings.ToUpper(spec.Algorithm)
	if alg == "" {
		alg = "SHA256"
	}
	enc := spec.Encoding
	if enc == "" {
		enc = "hex"
	}
	content := spec.Content
	if content == "" {
		content = "{body}"
	}
	d := Description{Headers: []string{spec.Header}}
	where := spec.Header
	switch {
	case spec.PartSeparator != "":
		where = fmt.Sprintf("%s part %s=", spec.Header, spec.SignatureKey)
	case spec.Prefix != "":
		where = fmt.Sprintf("%s after %q", spec.Header, spec.Prefix)
	}
	d.Content = fmt.Sprintf("HMAC-%s %s of %s in %s", alg, enc, content, where)
	ts := spec.Timestamp
	format := ts.Format
	if format == "" {
		format = "unix"
	}
	switch {
	case ts.Header != "":
		d.Headers = append(d.Headers, ts.Header)
		d.Timestamp = fmt.Sprintf("%s (%s), ±%s", ts.Header, format, tol)
	case ts.Part != "":
		d.Timestamp = fmt.Sprintf("%s part %s= (%s), ±%s", spec.Header, ts.Part, format, tol)
	case ts.Path != "":
		d.Timestamp = fmt.Sprintf("body %s (%s), ±%s", ts.Path, format, tol)
	}
	if spec.IDHeader != "" {
		d.Headers = append(d.Headers, spec.IDHeader)
	}
	return d
}

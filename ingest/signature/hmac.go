package signature

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// HMAC is the declarative HMAC scheme (Config.Scheme "hmac", and the
// presets of Presets): which digest, how the signature is written, where it
// and the timestamp are, and which bytes are signed. Everything a provider
// sends that the signature does not cover (delivery ids, event types) is
// the receiver's business, not this package's.
//
// The same security rules hold as for the coded schemes: constant-time
// comparison, every active secret tried, the timestamp window checked only
// once the signature matched, and the body never parsed before it did (a
// timestamp taken from the body is read after the MAC matched).
type HMAC struct {
	// Algorithm: "sha256" (default), "sha1" or "sha512".
	Algorithm string `yaml:"algorithm" json:"algorithm,omitempty"`
	// Encoding of the signature: "hex" (default, either case) or "base64"
	// (standard alphabet, padded).
	Encoding string `yaml:"encoding" json:"encoding,omitempty"`
	// SecretEncoding: "raw" (default: the secret's bytes are the key) or
	// "base64" (decoded first; a "whsec_" prefix is removed).
	SecretEncoding string `yaml:"secret_encoding" json:"secret_encoding,omitempty"`
	// Header carries the signature. Required.
	Header string `yaml:"header" json:"header"`
	// Prefix precedes the signature in Header ("sha256=", "v0="). With
	// PartSeparator it is not used.
	Prefix string `yaml:"prefix" json:"prefix,omitempty"`
	// PartSeparator, when set ("," or ";"), makes Header a list of
	// key=value parts (Stripe's "t=…,v1=…", Paddle's "ts=…;h1=…"). Every
	// part must be key=value; parts of other keys are ignored.
	PartSeparator string `yaml:"part_separator" json:"part_separator,omitempty"`
	// SignatureKey names the parts holding signatures ("v1", "h1"); several
	// may be present, and one whose value is not a signature of the
	// algorithm's size is skipped (as stripe-go does). Required with
	// PartSeparator.
	SignatureKey string `yaml:"signature_key" json:"signature_key,omitempty"`
	// Content is the signed content, a template of the parts {body} (the raw
	// bytes), {timestamp} (the timestamp's text as sent), {id} (IDHeader's
	// value), {method} (the request method), {url} (the public URL the
	// provider called: Config.PublicURL plus the query as received) and
	// literal text between them. Default "{body}".
	Content string `yaml:"content" json:"content,omitempty"`
	// Timestamp says where the signed timestamp is; zero: the scheme has
	// none (and no replay window).
	Timestamp TimestampSource `yaml:"timestamp" json:"timestamp,omitzero"`
	// URLDecode: {url} is signed with %3A %2F %3F %40 %21 %24 %27 %28 %29
	// %2A %2C %3B (either case) decoded, as HubSpot's v3 signature wants.
	URLDecode bool `yaml:"url_decode" json:"url_decode,omitempty"`
	// IDHeader names a header holding the event id (1 to 255 visible ASCII
	// characters), required when set, reported as Result.EventID and
	// available to Content as {id}.
	IDHeader string `yaml:"id_header" json:"id_header,omitempty"`
}

// TimestampSource locates a signed timestamp: exactly one of Header, Part
// (a part of the signature header) or Path (a dotted JSON path in the body,
// read only after the signature matched).
type TimestampSource struct {
	Header string `yaml:"header" json:"header,omitempty"`
	Part   string `yaml:"part" json:"part,omitempty"`
	Path   string `yaml:"path" json:"path,omitempty"`
	// Format: "unix" (seconds, default), "unix_ms" or "rfc3339".
	Format string `yaml:"format" json:"format,omitempty"`
}

func (ts TimestampSource) set() bool { return ts.Header != "" || ts.Part != "" || ts.Path != "" }

// template parts of HMAC.Content.
const (
	tplLiteral = iota
	tplBody
	tplTimestamp
	tplID
	tplMethod
	tplURL
)

type tplPart struct {
	kind int
	text []byte
}

var tplNames = map[string]int{"body": tplBody, "timestamp": tplTimestamp, "id": tplID, "method": tplMethod, "url": tplURL}

// compileContent parses a Content template.
func compileContent(s string) ([]tplPart, error) {
	if s == "" {
		s = "{body}"
	}
	var out []tplPart
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			out = append(out, tplPart{kind: tplLiteral, text: []byte(s)})
			break
		}
		if i > 0 {
			out = append(out, tplPart{kind: tplLiteral, text: []byte(s[:i])})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, errors.New("content: unclosed {")
		}
		name := s[i+1 : i+j]
		k, ok := tplNames[name]
		if !ok {
			return nil, fmt.Errorf("content: unknown part {%s} (want {body}, {timestamp}, {id}, {method}, {url})", name)
		}
		out = append(out, tplPart{kind: k})
		s = s[i+j+1:]
	}
	return out, nil
}

func (h *HMAC) uses(kind int) bool {
	parts, _ := compileContent(h.Content)
	for _, p := range parts {
		if p.kind == kind {
			return true
		}
	}
	return false
}

// hashFor returns the digest constructor and its size.
func hashFor(alg string) (func() hash.Hash, int, error) {
	switch alg {
	case "", "sha256":
		return sha256.New, sha256.Size, nil
	case "sha1":
		return sha1.New, sha1.Size, nil
	case "sha512":
		return sha512.New, sha512.Size, nil
	}
	return nil, 0, fmt.Errorf("algorithm: %q is not sha1, sha256 or sha512", alg)
}

// check validates h; publicURL says whether {url} can be filled.
func (h *HMAC) check(publicURL string) error {
	if _, _, err := hashFor(h.Algorithm); err != nil {
		return err
	}
	switch h.Encoding {
	case "", "hex", "base64":
	default:
		return fmt.Errorf("encoding: %q is not hex or base64", h.Encoding)
	}
	switch h.SecretEncoding {
	case "", "raw", "base64":
	default:
		return fmt.Errorf("secret_encoding: %q is not raw or base64", h.SecretEncoding)
	}
	if !isToken(h.Header) {
		return fmt.Errorf("header: %q is not a valid header name", h.Header)
	}
	if h.PartSeparator != "" {
		if h.PartSeparator != "," && h.PartSeparator != ";" {
			return fmt.Errorf("part_separator: %q is not \",\" or \";\"", h.PartSeparator)
		}
		if h.SignatureKey == "" {
			return errors.New("signature_key: required with part_separator")
		}
	} else if h.SignatureKey != "" || h.Timestamp.Part != "" {
		return errors.New("signature_key and timestamp.part: only with part_separator")
	}
	ts := h.Timestamp
	n := 0
	for _, v := range []string{ts.Header, ts.Part, ts.Path} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("timestamp: set one of header, part and path")
	}
	if ts.Header != "" && !isToken(ts.Header) {
		return fmt.Errorf("timestamp.header: %q is not a valid header name", ts.Header)
	}
	switch ts.Format {
	case "", "unix", "unix_ms", "rfc3339":
	default:
		return fmt.Errorf("timestamp.format: %q is not unix, unix_ms or rfc3339", ts.Format)
	}
	if h.IDHeader != "" && !isToken(h.IDHeader) {
		return fmt.Errorf("id_header: %q is not a valid header name", h.IDHeader)
	}
	parts, err := compileContent(h.Content)
	if err != nil {
		return err
	}
	for _, p := range parts {
		switch {
		case p.kind == tplTimestamp && ts.Header == "" && ts.Part == "":
			return errors.New("content: {timestamp} needs timestamp.header or timestamp.part (a body timestamp cannot be signed content)")
		case p.kind == tplID && h.IDHeader == "":
			return errors.New("content: {id} needs id_header")
		case p.kind == tplURL && publicURL == "":
			return errors.New("content: {url} needs the provider's public_url")
		}
	}
	return nil
}

// hmacKey turns a configured secret into key bytes.
func (h *HMAC) key(value []byte) ([]byte, error) {
	if h.SecretEncoding != "base64" {
		return append([]byte(nil), value...), nil
	}
	return decodeStandardSecret(value)
}

// hmacVerifier verifies one HMAC spec.
type hmacVerifier struct {
	spec      HMAC
	hash      func() hash.Hash
	size      int
	content   []tplPart
	keys      []key
	tol       time.Duration
	publicURL string
}

func newHMACVerifier(spec HMAC, keys []key, tol time.Duration, publicURL string) (*hmacVerifier, error) {
	if err := spec.check(publicURL); err != nil {
		return nil, err
	}
	hf, size, _ := hashFor(spec.Algorithm)
	content, _ := compileContent(spec.Content)
	return &hmacVerifier{spec: spec, hash: hf, size: size, content: content, keys: keys, tol: tol, publicURL: publicURL}, nil
}

// signed is what a request's headers yield before the MAC is computed.
type signed struct {
	tsText     string
	candidates [][]byte
	eventID    string
}

func (v *hmacVerifier) Verify(r *Request, now time.Time) (Result, error) {
	var s signed
	var err error
	if name := v.spec.Timestamp.Header; name != "" {
		if s.tsText, err = header(r.Header, name); err != nil {
			return Result{}, err
		}
	}
	if v.spec.IDHeader != "" {
		if s.eventID, err = eventIDHeader(r.Header, v.spec.IDHeader); err != nil {
			return Result{}, err
		}
	}
	sigText, err := header(r.Header, v.spec.Header)
	if err != nil {
		return Result{}, err
	}
	if v.spec.PartSeparator == "" {
		sig, err := v.decodePrefixed(sigText)
		if err != nil {
			return Result{}, malformed(v.spec.Header, err.Error())
		}
		s.candidates = [][]byte{sig}
	} else {
		ts, sigs, err := v.parseParts(sigText)
		if err != nil {
			return Result{}, malformed(v.spec.Header, err.Error())
		}
		s.candidates = sigs
		if v.spec.Timestamp.Part != "" {
			s.tsText = ts
		}
	}
	var at time.Time
	if s.tsText != "" {
		if at, err = parseTime(s.tsText, v.spec.Timestamp.Format); err != nil {
			name := v.spec.Timestamp.Header
			if name == "" {
				name = v.spec.Header
			}
			return Result{}, malformed(name, "timestamp: "+err.Error())
		}
	}
	id, ok := matchWith(v.hash, v.keys, s.candidates, func(m hash.Hash) { v.writeContent(m, r, s) })
	if !ok {
		return Result{}, badSignature()
	}
	if path := v.spec.Timestamp.Path; path != "" {
		// The body is authentic now; only now is it read.
		if at, err = bodyTime(r.Body, path, v.spec.Timestamp.Format); err != nil {
			return Result{}, malformed("body "+path, err.Error())
		}
	}
	if v.spec.Timestamp.set() {
		if err := checkWindow(at, now, v.tol); err != nil {
			return Result{}, err
		}
	}
	return Result{SecretID: id, Timestamp: at, EventID: s.eventID}, nil
}

// writeContent writes the signed content of r into m.
func (v *hmacVerifier) writeContent(m hash.Hash, r *Request, s signed) {
	for _, p := range v.content {
		switch p.kind {
		case tplLiteral:
			m.Write(p.text)
		case tplBody:
			m.Write(r.Body)
		case tplTimestamp:
			m.Write([]byte(s.tsText))
		case tplID:
			m.Write([]byte(s.eventID))
		case tplMethod:
			m.Write([]byte(r.method()))
		case tplURL:
			u := publicURL(v.publicURL, r.RawQuery)
			if v.spec.URLDecode {
				u = hubspotDecoder.Replace(u)
			}
			m.Write([]byte(u))
		}
	}
}

// hubspotDecoder decodes the escapes HubSpot's v3 signature signs decoded.
var hubspotDecoder = func() *strings.Replacer {
	var pairs []string
	for _, c := range ":/?@!$'()*,;" {
		hex := fmt.Sprintf("%%%02X", c)
		pairs = append(pairs, hex, string(c), strings.ToLower(hex), string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// publicURL is the URL a provider called: the configured public URL and
// the query string as received. Host and X-Forwarded-* are never used.
func publicURL(base, rawQuery string) string {
	if rawQuery == "" {
		return base
	}
	return base + "?" + rawQuery
}

// matchWith is match for any digest, with the content written by write.
// Every key and every candidate is always examined.
func matchWith(hf func() hash.Hash, keys []key, candidates [][]byte, write func(hash.Hash)) (string, bool) {
	found := -1
	for i := range keys {
		m := hmac.New(hf, keys[i].value)
		write(m)
		expected := m.Sum(nil)
		for _, c := range candidates {
			if hmac.Equal(expected, c) && found < 0 {
				found = i
			}
		}
	}
	if found < 0 {
		return "", false
	}
	return keys[found].id, true
}

// Validate reports what is wrong with h as a provider's definition;
// publicURL is the provider's public_url ("" when none is configured).
func (h *HMAC) Validate(publicURL string) error { return h.check(publicURL) }

package signature

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

// HMAC is the declarative HMAC definition (schemas/providers): which
// digest, how the signature is written, where it and the timestamp are,
// and which bytes are signed. Everything a provider sends that the
// signature does not cover (delivery ids, event types) is the receiver's
// business, not this package's.
//
// The same security rules hold as for the coded schemes: constant-time
// comparison, every active secret tried, the timestamp window checked only
// once the signature matched, and the body never parsed before it did (a
// timestamp taken from the body is read after the MAC matched).
type HMAC = providers.HMAC

// TimestampSource locates a signed timestamp (schemas/providers).
type TimestampSource = providers.TimestampSource

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

// hmacKey turns a configured secret into key bytes.
func hmacKey(h HMAC, value []byte) ([]byte, error) {
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
	content   []providers.ContentPart
	keys      []key
	tol       time.Duration
	publicURL string
}

func newHMACVerifier(spec HMAC, keys []key, tol time.Duration, publicURL string) (*hmacVerifier, error) {
	if err := spec.Validate(publicURL); err != nil {
		return nil, err
	}
	hf, size, err := hashFor(spec.Algorithm)
	if err != nil {
		return nil, err
	}
	content, _ := providers.ParseContent(spec.Content)
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
	if v.spec.Timestamp.Set() {
		if err := checkWindow(at, now, v.tol); err != nil {
			return Result{}, err
		}
	}
	return Result{SecretID: id, Timestamp: at, EventID: s.eventID}, nil
}

// writeContent writes the signed content of r into m.
func (v *hmacVerifier) writeContent(m hash.Hash, r *Request, s signed) {
	for _, p := range v.content {
		switch p.Kind {
		case providers.PartLiteral:
			m.Write(p.Text)
		case providers.PartBody:
			m.Write(r.Body)
		case providers.PartTimestamp:
			m.Write([]byte(s.tsText))
		case providers.PartID:
			m.Write([]byte(s.eventID))
		case providers.PartMethod:
			m.Write([]byte(r.method()))
		case providers.PartURL:
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

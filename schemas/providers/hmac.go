package providers

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// HMAC is the declarative HMAC scheme (scheme "hmac" in the
// configuration, and the signing presets of ingest/signature): which digest, how the signature is written, where it
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
	// provider called: public_url plus the query as received) and
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

// Set reports whether ts names a source.
func (ts TimestampSource) Set() bool { return ts.Header != "" || ts.Part != "" || ts.Path != "" }

// The parts of HMAC.Content.
const (
	PartLiteral PartKind = iota
	PartBody
	PartTimestamp
	PartID
	PartMethod
	PartURL
)

// PartKind is the kind of one part of HMAC.Content.
type PartKind int

// ContentPart is one part of a parsed HMAC.Content: literal Text, or one
// of the named parts.
type ContentPart struct {
	Kind PartKind
	Text []byte
}

func partKind(name string) (PartKind, bool) {
	switch name {
	case "body":
		return PartBody, true
	case "timestamp":
		return PartTimestamp, true
	case "id":
		return PartID, true
	case "method":
		return PartMethod, true
	case "url":
		return PartURL, true
	}
	return 0, false
}

// ParseContent parses an HMAC.Content template ("" is "{body}").
func ParseContent(s string) ([]ContentPart, error) {
	if s == "" {
		s = "{body}"
	}
	var out []ContentPart
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			out = append(out, ContentPart{Kind: PartLiteral, Text: []byte(s)})
			break
		}
		if i > 0 {
			out = append(out, ContentPart{Kind: PartLiteral, Text: []byte(s[:i])})
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, errors.New("content: unclosed {")
		}
		name := s[i+1 : i+j]
		k, ok := partKind(name)
		if !ok {
			return nil, fmt.Errorf("content: unknown part {%s} (want {body}, {timestamp}, {id}, {method}, {url})", name)
		}
		out = append(out, ContentPart{Kind: k})
		s = s[i+j+1:]
	}
	return out, nil
}

// Uses reports whether h's content signs the part kind.
func (h *HMAC) Uses(kind PartKind) bool {
	parts, _ := ParseContent(h.Content)
	for _, p := range parts {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// Validate reports what is wrong with h as a provider's definition;
// publicURL is the provider's public_url ("" when none is configured).
// Errors name the key ("algorithm: …", "content: …").
func (h *HMAC) Validate(publicURL string) error {
	switch h.Algorithm {
	case "", "sha256", "sha1", "sha512":
	default:
		return fmt.Errorf("algorithm: %q is not sha1, sha256 or sha512", h.Algorithm)
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
	if !httpguts.ValidHeaderFieldName(h.Header) {
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
	if ts.Header != "" && !httpguts.ValidHeaderFieldName(ts.Header) {
		return fmt.Errorf("timestamp.header: %q is not a valid header name", ts.Header)
	}
	switch ts.Format {
	case "", "unix", "unix_ms", "rfc3339":
	default:
		return fmt.Errorf("timestamp.format: %q is not unix, unix_ms or rfc3339", ts.Format)
	}
	if h.IDHeader != "" && !httpguts.ValidHeaderFieldName(h.IDHeader) {
		return fmt.Errorf("id_header: %q is not a valid header name", h.IDHeader)
	}
	parts, err := ParseContent(h.Content)
	if err != nil {
		return err
	}
	for _, p := range parts {
		switch {
		case p.Kind == PartTimestamp && ts.Header == "" && ts.Part == "":
			return errors.New("content: {timestamp} needs timestamp.header or timestamp.part (a body timestamp cannot be signed content)")
		case p.Kind == PartID && h.IDHeader == "":
			return errors.New("content: {id} needs id_header")
		case p.Kind == PartURL && publicURL == "":
			return errors.New("content: {url} needs the provider's public_url")
		}
	}
	return nil
}

package signature

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// decodePrefixed parses "<prefix><signature>".
func (v *hmacVerifier) decodePrefixed(s string) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, v.spec.Prefix)
	if !ok {
		return nil, fmt.Errorf("want %s followed by the signature", v.spec.Prefix)
	}
	return v.decode(rest)
}

// decode parses one signature in the spec's encoding and size.
func (v *hmacVerifier) decode(s string) ([]byte, error) {
	if v.spec.Encoding == "base64" {
		if len(s) != base64.StdEncoding.EncodedLen(v.size) {
			return nil, fmt.Errorf("want base64 of %d bytes", v.size)
		}
		b, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(b) != v.size {
			return nil, fmt.Errorf("want base64 of %d bytes", v.size)
		}
		return b, nil
	}
	if len(s) != 2*v.size {
		return nil, fmt.Errorf("want %d hex digits", 2*v.size)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hex")
	}
	return b, nil
}

// parseParts parses "k=v<sep>k=v…": every part key=value (whitespace
// around parts and '=' tolerated), the timestamp part (when the spec has
// one) exactly once, at least one usable signature part and at most
// maxCandidates. Error texts never contain the header's content.
func (v *hmacVerifier) parseParts(s string) (string, [][]byte, error) {
	var ts string
	var sigs [][]byte
	seenT := false
	for _, pair := range strings.Split(s, v.spec.PartSeparator) {
		k, val, ok := strings.Cut(pair, "=")
		k, val = trim(k), trim(val)
		if !ok || k == "" {
			return "", nil, fmt.Errorf("want key=value parts separated by %q", v.spec.PartSeparator)
		}
		switch k {
		case v.spec.Timestamp.Part:
			if seenT {
				return "", nil, fmt.Errorf("repeated %s=", k)
			}
			seenT, ts = true, val
		case v.spec.SignatureKey:
			sig, err := v.decode(val)
			if err != nil {
				continue // as stripe-go: an entry it cannot use is skipped
			}
			if len(sigs) == maxCandidates {
				return "", nil, fmt.Errorf("too many %s= signatures", k)
			}
			sigs = append(sigs, sig)
		}
	}
	if v.spec.Timestamp.Part != "" && (!seenT || ts == "") {
		return "", nil, fmt.Errorf("no %s= timestamp", v.spec.Timestamp.Part)
	}
	if len(sigs) == 0 {
		return "", nil, fmt.Errorf("no usable %s= signature", v.spec.SignatureKey)
	}
	return ts, sigs, nil
}

// parseTime parses a timestamp's text in format.
func parseTime(s, format string) (time.Time, error) {
	switch format {
	case "rfc3339":
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, errors.New("not an RFC 3339 time")
		}
		return t, nil
	case "unix_ms":
		n, err := parseTimestamp(s)
		if err != nil {
			return time.Time{}, errors.New("not a Unix time in milliseconds")
		}
		return time.UnixMilli(n), nil
	}
	n, err := parseTimestamp(s)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(n, 0), nil
}

// bodyTime reads a timestamp from an authentic JSON body.
func bodyTime(body []byte, path, format string) (time.Time, error) {
	v := gjson.GetBytes(body, path)
	switch v.Type {
	case gjson.String:
		return parseTime(v.Str, format)
	case gjson.Number:
		return parseTime(v.Raw, format)
	}
	return time.Time{}, errors.New("no timestamp at this path")
}

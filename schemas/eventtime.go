package schemas

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// isRFC3339 reports whether s has the shape of RFC 3339's date-time
// production, YYYY-MM-DDTHH:MM:SS[.digits](Z|±HH:MM), with upper-case T and
// Z as Go, Java's Instant and JSON Schema's date-time all read it; the
// values are checked by time.Parse. (A regexp did the same at ~10 times the
// cost, on every delivery.)
func isRFC3339(s string) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(shape)+1 {
		return false
	}
	for i := 0; i < len(shape); i++ {
		if c := s[i]; (shape[i] == 'd' && (c < '0' || c > '9')) || (shape[i] != 'd' && c != shape[i]) {
			return false
		}
	}
	rest := s[len(shape):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	if rest == "Z" {
		return true
	}
	// An offset of at most 23:59 (Go's parser would take +24:00, which
	// RFC 3339 and the JSON Schema date-time readers refuse).
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && digits(rest[1:3]) && rest[3] == ':' && digits(rest[4:6]) &&
		rest[1:3] <= "23" && rest[4:6] <= "59"
}

// EventTime reads a provider's creation time as the provider wrote it and
// returns the ce_time text and the instant. RFC 3339 text is kept exactly as
// given (offset and every fraction digit). A Unix time — seconds, with an
// optional decimal fraction (Mailgun), or milliseconds when the integer part
// is above 10^11 (Zoom, HubSpot, Clerk) — is written as RFC 3339 in
// UTC with exactly the precision given: no fraction for whole seconds,
// three digits for milliseconds, the given digits of a fraction. The digits
// are converted as text, never through a float, so nothing is rounded.
// Anything else (empty, non-positive, beyond 10^14, another date format)
// reports false.
func EventTime(s string) (string, time.Time, bool) {
	if isRFC3339(s) {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return s, t.UTC(), true
		}
		return "", time.Time{}, false
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if !digits(intPart) || (strings.Contains(s, ".") && !digits(frac)) || len(intPart) > 14 {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || n <= 0 || n > 1e14 {
		return "", time.Time{}, false
	}
	sec := n
	if n > 1e11 { // milliseconds
		sec = n / 1000
		frac = strconv.FormatInt(n%1000+1000, 10)[1:] + frac
	}
	nanos := 0
	if frac != "" {
		nanos, _ = strconv.Atoi((frac + "000000000")[:9])
	}
	t := time.Unix(sec, int64(nanos)).UTC()
	text := t.Format("2006-01-02T15:04:05")
	if frac != "" {
		text += "." + frac
	}
	return text + "Z", t, true
}

// EventTimeJSON is EventTime over a JSON value: a string, or a number as
// written (an exponent form is refused rather than rounded).
func EventTimeJSON(v gjson.Result) (string, time.Time, bool) {
	switch v.Type {
	case gjson.String:
		return EventTime(v.Str)
	case gjson.Number:
		return EventTime(v.Raw)
	}
	return "", time.Time{}, false
}

// EnvelopeTime finds the provider's creation time in a stored envelope and
// returns its ce_time text (EventTime): created_at (gatehouse's wrapped
// envelopes, the reference scheme), created (Stripe, Unix seconds) or
// timestamp (Standard Webhooks), the first that reads. The receiver reads
// the same members in the same order, so the text found here is the one it
// wrote to outbox.event_time; the relay and replays use it for rows without
// one.
func EnvelopeTime(payload []byte) (string, bool) {
	payload = bytes.TrimSpace(payload)
	if !gjson.ValidBytes(payload) {
		return "", false
	}
	root := gjson.ParseBytes(payload)
	if !root.IsObject() {
		return "", false
	}
	for _, v := range Members(root, "created_at", "created", "timestamp") {
		if text, _, ok := EventTimeJSON(v); ok {
			return text, true
		}
	}
	return "", false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

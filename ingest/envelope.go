package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
)

// errBadEnvelope marks a verified body that cannot be recorded (400).
var errBadEnvelope = errors.New("bad envelope")

// parsed is what the receiver records of one verified delivery.
type parsed struct {
	ID        string
	Type      string
	CreatedAt *time.Time
	Payload   []byte // the envelope stored in inbox.payload and relayed to Kafka

	fields map[string]json.RawMessage // top-level fields of Payload
}

// parseDelivery maps a verified body into the inbox fields. Providers that
// send the envelope themselves (reference, stripe, standard-webhooks) are
// stored verbatim; GitHub, Slack and Shopify bodies are wrapped in an envelope
// whose data is the body. The body is decoded once, into its top-level
// fields; nested values are decoded only where they are read.
func parseDelivery(scheme string, h http.Header, body []byte, res signature.Result, now time.Time) (parsed, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		if !json.Valid(body) {
			return parsed{}, fmt.Errorf("%w: body is not valid JSON", errBadEnvelope)
		}
		return parsed{}, fmt.Errorf("%w: body is not a JSON object", errBadEnvelope)
	}
	switch scheme {
	case "github":
		t := h.Get("X-GitHub-Event")
		if action := stringField(fields, "action"); action != "" && t != "" {
			t += "." + action
		}
		return wrap(res.EventID, t, now, body)
	case "shopify":
		t := strings.ReplaceAll(h.Get("X-Shopify-Topic"), "/", ".")
		at := now
		if v, err := time.Parse(time.RFC3339Nano, h.Get("X-Shopify-Triggered-At")); err == nil {
			at = v
		}
		return wrap(res.EventID, t, at, body)
	case "slack":
		var event struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(fields["event"], &event)
		t := event.Type
		if t == "" {
			t = stringField(fields, "type")
		}
		at := now
		if v, ok := parseTime(fields["event_time"]); ok {
			at = v
		}
		return wrap(stringField(fields, "event_id"), t, at, body)
	}
	var id, typ string
	for name, dst := range map[string]*string{"id": &id, "type": &typ} {
		if raw, ok := fields[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return parsed{}, fmt.Errorf("%w: %q must be a string", errBadEnvelope, name)
			}
		}
	}
	if id == "" {
		id = res.EventID // standard-webhooks carries the id in webhook-id
	}
	if id == "" {
		return parsed{}, fmt.Errorf("%w: missing \"id\"", errBadEnvelope)
	}
	if typ == "" {
		return parsed{}, fmt.Errorf("%w: missing \"type\"", errBadEnvelope)
	}
	p := parsed{ID: id, Type: typ, Payload: body, fields: fields}
	// Stripe writes created (Unix seconds), Standard Webhooks timestamp.
	for _, name := range []string{"created_at", "created", "timestamp"} {
		if t, ok := parseTime(fields[name]); ok {
			p.CreatedAt = &t
			break
		}
	}
	return p, nil
}

// stringField returns fields[name] when it is a JSON string.
func stringField(fields map[string]json.RawMessage, name string) string {
	var s string
	_ = json.Unmarshal(fields[name], &s)
	return s
}

func wrap(id, typ string, at time.Time, body []byte) (parsed, error) {
	if id == "" {
		return parsed{}, fmt.Errorf("%w: missing event id", errBadEnvelope)
	}
	if typ == "" {
		return parsed{}, fmt.Errorf("%w: missing event type", errBadEnvelope)
	}
	at = at.UTC()
	b, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt string          `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}{id, typ, at.Format(time.RFC3339Nano), body})
	if err != nil {
		return parsed{}, fmt.Errorf("wrap envelope: %w", err)
	}
	fields := map[string]json.RawMessage{"data": body}
	return parsed{ID: id, Type: typ, CreatedAt: &at, Payload: b, fields: fields}, nil
}

// parseTime accepts an RFC 3339 string or Unix seconds.
func parseTime(raw json.RawMessage) (time.Time, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC(), true
		}
		return time.Time{}, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), true
	}
	return time.Time{}, false
}

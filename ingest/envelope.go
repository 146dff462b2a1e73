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
}

// envelope is the SPEC.md envelope; Stripe writes created (unix seconds)
// instead of created_at.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt json.RawMessage `json:"created_at"`
	Created   json.RawMessage `json:"created"`
	Timestamp json.RawMessage `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// parseDelivery maps a verified body into the inbox fields. Providers that
// send the envelope themselves (reference, stripe, standard-webhooks) are
// stored verbatim; GitHub, Slack and Shopify bodies are wrapped in an envelope
// whose data is the body.
func parseDelivery(scheme string, h http.Header, body []byte, res signature.Result, now time.Time) (parsed, error) {
	if !json.Valid(body) {
		return parsed{}, fmt.Errorf("%w: body is not valid JSON", errBadEnvelope)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return parsed{}, fmt.Errorf("%w: body is not a JSON object", errBadEnvelope)
	}
	switch scheme {
	case "github":
		return wrap(res.EventID, githubType(h, body), now, body)
	case "shopify":
		t := strings.ReplaceAll(h.Get("X-Shopify-Topic"), "/", ".")
		at := now
		if v, err := time.Parse(time.RFC3339Nano, h.Get("X-Shopify-Triggered-At")); err == nil {
			at = v
		}
		return wrap(res.EventID, t, at, body)
	case "slack":
		var s struct {
			EventID   string `json:"event_id"`
			EventTime int64  `json:"event_time"`
			Event     struct {
				Type string `json:"type"`
			} `json:"event"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &s)
		t := s.Event.Type
		if t == "" {
			t = s.Type
		}
		at := now
		if s.EventTime > 0 {
			at = time.Unix(s.EventTime, 0)
		}
		return wrap(s.EventID, t, at, body)
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return parsed{}, fmt.Errorf("%w: id, type and created_at must be strings: %v", errBadEnvelope, err)
	}
	id := env.ID
	if id == "" {
		id = res.EventID // standard-webhooks carries the id in webhook-id
	}
	if id == "" {
		return parsed{}, fmt.Errorf("%w: missing \"id\"", errBadEnvelope)
	}
	if env.Type == "" {
		return parsed{}, fmt.Errorf("%w: missing \"type\"", errBadEnvelope)
	}
	p := parsed{ID: id, Type: env.Type, Payload: body}
	for _, raw := range []json.RawMessage{env.CreatedAt, env.Created, env.Timestamp} {
		if t, ok := parseTime(raw); ok {
			p.CreatedAt = &t
			break
		}
	}
	return p, nil
}

func githubType(h http.Header, body []byte) string {
	t := h.Get("X-GitHub-Event")
	var a struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &a)
	if a.Action != "" && t != "" {
		t += "." + a.Action
	}
	return t
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
	return parsed{ID: id, Type: typ, CreatedAt: &at, Payload: b}, nil
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

// lookupPath follows a dotted path ("data.object.id") through JSON objects
// and returns the string (or number) found there.
func lookupPath(doc []byte, path string) (string, bool) {
	cur := json.RawMessage(doc)
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			return "", false
		}
		next, ok := obj[part]
		if !ok {
			return "", false
		}
		cur = next
	}
	var s string
	if err := json.Unmarshal(cur, &s); err == nil {
		return s, s != ""
	}
	var n json.Number
	if err := json.Unmarshal(cur, &n); err == nil {
		return n.String(), true
	}
	return "", false
}

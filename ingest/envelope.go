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
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas"
)

// errBadEnvelope marks a verified body that cannot be recorded (400).
var errBadEnvelope = errors.New("bad envelope")

// parsed is what the receiver records of one verified delivery.
type parsed struct {
	ID        string
	Type      string
	CreatedAt *time.Time
	Payload   []byte // the envelope stored in inbox.payload and relayed to Kafka

	root gjson.Result // Payload, parsed (aggregate_id_path lookups)
}

// parseDelivery maps a verified body into the inbox fields. Providers that
// send the envelope themselves (reference, stripe, standard-webhooks) are
// stored verbatim; GitHub, Slack and Shopify bodies are wrapped in an envelope
// whose data is the body. The body is validated once and read in place
// (gjson): only the members the receiver needs are looked at, where an
// object repeats a name the last one counts (as in the stored jsonb).
func parseDelivery(k providers.Kind, h http.Header, body []byte, res signature.Result, now time.Time) (parsed, error) {
	if k.Envelope == providers.EnvelopeFields {
		return parseFields(k, h, body, res, now)
	}
	if err := storable(body); err != nil {
		return parsed{}, err
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return parsed{}, fmt.Errorf("%w: body is not a JSON object", errBadEnvelope)
	}
	switch k.Envelope {
	case providers.EnvelopeGitHub:
		t := h.Get("X-GitHub-Event")
		if action := stringField(root, "action"); action != "" && t != "" {
			t += "." + action
		}
		return wrap(res.EventID, t, now, body)
	case providers.EnvelopeShopify:
		t := strings.ReplaceAll(h.Get("X-Shopify-Topic"), "/", ".")
		at := now
		if v, err := time.Parse(time.RFC3339Nano, h.Get("X-Shopify-Triggered-At")); err == nil {
			at = v
		}
		return wrap(res.EventID, t, at, body)
	case providers.EnvelopeSlack:
		f := schemas.Members(root, "event", "type", "event_time", "event_id")
		t := ""
		if f[0].IsObject() {
			t = stringField(f[0], "type")
		}
		if t == "" && f[1].Type == gjson.String {
			t = f[1].Str
		}
		at := now
		if v, ok := parseTime(f[2]); ok {
			at = v
		}
		id := ""
		if f[3].Type == gjson.String {
			id = f[3].Str
		}
		return wrap(id, t, at, body)
	}
	f := schemas.Members(root, "id", "type", "created_at", "created", "timestamp")
	var idType [2]string
	for i, name := range []string{"id", "type"} {
		switch f[i].Type {
		case gjson.String:
			idType[i] = f[i].Str
		case gjson.Null: // absent or null: missing
		default:
			return parsed{}, fmt.Errorf("%w: %q must be a string", errBadEnvelope, name)
		}
	}
	id, typ := idType[0], idType[1]
	if id == "" {
		id = res.EventID // standard-webhooks carries the id in webhook-id
	}
	if id == "" {
		return parsed{}, fmt.Errorf("%w: missing \"id\"", errBadEnvelope)
	}
	if typ == "" {
		return parsed{}, fmt.Errorf("%w: missing \"type\"", errBadEnvelope)
	}
	p := parsed{ID: id, Type: typ, Payload: body, root: root}
	// Stripe writes created (Unix seconds), Standard Webhooks timestamp.
	for _, v := range f[2:] {
		if t, ok := parseTime(v); ok {
			p.CreatedAt = &t
			break
		}
	}
	return p, nil
}

// storable rejects bodies that are not JSON, or that PostgreSQL's jsonb
// would refuse: invalid UTF-8 and the \u0000 escape (jsonb cannot hold
// NUL). Refusing them here answers 400 to that delivery alone instead of
// failing the statement that carries it.
func storable(body []byte) error {
	if !gjson.ValidBytes(body) {
		return fmt.Errorf("%w: body is not valid JSON", errBadEnvelope)
	}
	if !utf8.Valid(body) {
		return fmt.Errorf("%w: body is not valid UTF-8", errBadEnvelope)
	}
	nul := []byte(`\u0000`)
	for off := 0; ; {
		i := bytes.Index(body[off:], nul)
		if i < 0 {
			break
		}
		i += off
		slashes := 0
		for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 { // the backslash of \u0000 is not itself escaped
			return fmt.Errorf("%w: body contains \\u0000, which cannot be stored", errBadEnvelope)
		}
		off = i + 1
	}
	return nil
}

// stringField returns obj's member name when it is a JSON string.
func stringField(obj gjson.Result, name string) string {
	if v := schemas.Member(obj, name); v.Type == gjson.String {
		return v.Str
	}
	return ""
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
	return parsed{ID: id, Type: typ, CreatedAt: &at, Payload: b, root: gjson.ParseBytes(b)}, nil
}

// parseTime accepts an RFC 3339 string or a Unix time (seconds, or
// milliseconds past 10^11: Clerk's timestamp).
func parseTime(v gjson.Result) (time.Time, bool) {
	switch v.Type {
	case gjson.String:
		if t, err := time.Parse(time.RFC3339Nano, v.Str); err == nil {
			return t.UTC(), true
		}
	case gjson.Number:
		if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
			return unixTime(float64(n)), true
		}
	}
	return time.Time{}, false
}

// AggregateID is the subject object's id of an envelope (the outbox
// aggregateid and Kafka key): the first of paths (a provider's
// aggregate_id_path) that holds a string or number. The receiver and Replay
// both use it, so a replayed event keeps its key.
func AggregateID(root gjson.Result, paths []string) (string, bool) {
	for _, path := range paths {
		if v, ok := schemas.LookupPath(root, path); ok {
			return v, true
		}
	}
	return "", false
}

// unixTime reads a Unix time in seconds (with a fraction, as Mailgun) or,
// past 10^11, in milliseconds (Clerk, Zoom, Linear, HubSpot).
func unixTime(f float64) time.Time {
	if f > 1e11 {
		return time.UnixMilli(int64(f)).UTC()
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)).Truncate(time.Microsecond).UTC()
}

// Length caps on what becomes a key in PostgreSQL. A btree index entry
// holds at most 2704 bytes (a third of an 8 kB page, less its headers:
// PostgreSQL refuses a longer one with SQLSTATE 54000); the event id is in
// inbox's and processed_events' primary keys beside the provider name,
// the aggregate id in outbox_unsent_key_idx beside the topic (at most 249
// bytes) and in provider_objects' primary key beside the provider. The
// caps leave that limit far away whatever the encoding (they count bytes),
// and no provider comes near them: ids are UUIDs, ULIDs, "evt_…" strings
// or a 71-byte "sha256:<hex>", types dotted names, aggregate ids object
// ids, repository names or URIs.
const (
	// MaxEventIDBytes bounds an event id from any source (body, header,
	// joined parts), as ingest/signature bounds id headers.
	MaxEventIDBytes = 255
	// MaxEventTypeBytes bounds an event type.
	MaxEventTypeBytes = 255
	// MaxAggregateIDBytes bounds an aggregate id (the Kafka key and the
	// consumers' object id).
	MaxAggregateIDBytes = 1024
)

// checkLengths refuses (errBadEnvelope, naming the field) a record whose
// id, type or aggregate id is longer than its cap: such a row would fail
// in PostgreSQL, and the provider would retry it for days.
func checkLengths(rec Record) error {
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{{"event id", rec.EventID, MaxEventIDBytes}, {"event type", rec.Type, MaxEventTypeBytes}, {"aggregate id", rec.AggregateID, MaxAggregateIDBytes}} {
		if len(f.v) > f.max {
			return fmt.Errorf("%w: %s is %d bytes, longer than %d", errBadEnvelope, f.name, len(f.v), f.max)
		}
	}
	return nil
}

package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	Time      string // CreatedAt as the provider wrote it (schemas.EventTime): outbox.event_time, ce_time
	Payload   []byte // the envelope stored in inbox.payload and relayed to Kafka

	root gjson.Result // Payload, parsed (aggregate_id_path lookups)
}

// parseDelivery maps a verified body into the inbox fields. Providers that
// send the envelope themselves (EnvelopeBody: reference, stripe,
// standard-webhooks) are stored verbatim; the others' bodies are wrapped in
// an envelope whose data is the body (parseFields). The body is validated once and read in place
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
	// Stripe writes created (Unix seconds), Standard Webhooks timestamp;
	// schemas.EnvelopeTime reads the same members in the same order.
	for _, v := range f[2:] {
		if text, t, ok := schemas.EventTimeJSON(v); ok {
			p.CreatedAt, p.Time = &t, text
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

// eventTime is a creation time as written (text, the envelope's created_at
// and the record's ce_time) and as an instant (inbox.event_created_at).
type eventTime struct {
	text string
	at   time.Time
}

// receivedAt is the creation time of an event whose provider gives none:
// the receiver's clock, in UTC with nanoseconds.
func receivedAt(now time.Time) eventTime {
	now = now.UTC()
	return eventTime{now.Format(time.RFC3339Nano), now}
}

// wrap builds the envelope {"id","type","created_at","data"} of a provider
// that sends none; created_at is at's text, the same text as ce_time.
func wrap(id, typ string, at eventTime, body []byte) (parsed, error) {
	if id == "" {
		return parsed{}, fmt.Errorf("%w: missing event id", errBadEnvelope)
	}
	if typ == "" {
		return parsed{}, fmt.Errorf("%w: missing event type", errBadEnvelope)
	}
	b, err := json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt string          `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}{id, typ, at.text, body})
	if err != nil {
		return parsed{}, fmt.Errorf("wrap envelope: %w", err)
	}
	return parsed{ID: id, Type: typ, CreatedAt: &at.at, Time: at.text, Payload: b, root: gjson.ParseBytes(b)}, nil
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

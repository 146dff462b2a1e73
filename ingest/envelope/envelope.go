// Package envelope reads a verified delivery: the events its body holds
// (one, or one per element of a batch), each with its id, type and creation
// time from the provider kind's fields, wrapped in the envelope gatehouse
// stores and relays; and the bounds on what becomes a key in PostgreSQL.
// Pure: no I/O, table-tested and fuzzed.
package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// errBadEnvelope marks a verified body that cannot be recorded (400):
// the inbox's own, which a write PostgreSQL refuses for its content wraps
// too.
var errBadEnvelope = inbox.ErrBadEnvelope

// Event is one event of a verified delivery, as the receiver records it.
type Event struct {
	ID        string
	Type      string
	CreatedAt *time.Time
	Time      string // CreatedAt as the provider wrote it (schemas.EventTime): outbox.event_time, ce_time
	Payload   []byte // the envelope stored in inbox.payload and relayed to Kafka

	Root gjson.Result // Payload, parsed (aggregate_id_path lookups)
}

// parseDelivery maps a verified body into the inbox fields. Providers that
// send the envelope themselves (EnvelopeBody: reference, stripe,
// standard-webhooks) are stored verbatim; the others' bodies are wrapped in
// an envelope whose data is the body (parseFields). The body is validated once and read in place
// (gjson): only the members the receiver needs are looked at, where an
// object repeats a name the last one counts (as in the stored jsonb).
func parseDelivery(k providers.Kind, h http.Header, body []byte, res signature.Result, now time.Time) (Event, error) {
	if k.Envelope == providers.EnvelopeFields {
		return parseFields(k, h, body, res, now)
	}
	if err := storable(body); err != nil {
		return Event{}, err
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return Event{}, fmt.Errorf("%w: body is not a JSON object", errBadEnvelope)
	}
	f := schemas.Members(root, "id", "type", "created_at", "created", "timestamp")
	var idType [2]string
	for i, name := range []string{"id", "type"} {
		switch f[i].Type {
		case gjson.String:
			idType[i] = f[i].Str
		case gjson.Null: // absent or null: missing
		default:
			return Event{}, fmt.Errorf("%w: %q must be a string", errBadEnvelope, name)
		}
	}
	id, typ := idType[0], idType[1]
	if id == "" {
		id = res.EventID // standard-webhooks carries the id in webhook-id
	}
	if id == "" {
		return Event{}, fmt.Errorf("%w: missing \"id\"", errBadEnvelope)
	}
	if typ == "" {
		return Event{}, fmt.Errorf("%w: missing \"type\"", errBadEnvelope)
	}
	if err := reservedType(typ); err != nil {
		return Event{}, err
	}
	p := Event{ID: id, Type: typ, Payload: body, Root: root}
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
// that sends none; created_at is at's text, the same text as ce_time. data
// is compacted and its <, > and & escaped, as encoding/json does with a
// RawMessage, unless compact says it already is (formJSON's output).
func wrap(id, typ string, at eventTime, data []byte, compact bool) (Event, error) {
	if id == "" {
		return Event{}, fmt.Errorf("%w: missing event id", errBadEnvelope)
	}
	if typ == "" {
		return Event{}, fmt.Errorf("%w: missing event type", errBadEnvelope)
	}
	if err := reservedType(typ); err != nil {
		return Event{}, err
	}
	b := make([]byte, 0, len(data)+len(id)+len(typ)+len(at.text)+48)
	b = gjson.AppendJSONString(append(b, `{"id":`...), id)
	b = gjson.AppendJSONString(append(b, `,"type":`...), typ)
	b = gjson.AppendJSONString(append(b, `,"created_at":`...), at.text)
	b = append(b, `,"data":`...)
	if compact {
		b = append(b, data...)
	} else {
		b = appendCompact(b, data)
	}
	b = append(b, '}')
	return Event{ID: id, Type: typ, CreatedAt: &at.at, Time: at.text, Payload: b, Root: gjson.ParseBytes(b)}, nil
}

// reservedType refuses a provider event of gatehouse's own erasure-notice
// type: the consumers skip such a record and data teams erase what it
// names, so a provider's event of that type (a custom hmac provider whose
// type is read from a header, say) must never reach the topic.
func reservedType(typ string) error {
	if typ == schemas.ErasureNoticeType {
		return fmt.Errorf("%w: event type %q is reserved for gatehouse's erasure notices", errBadEnvelope, typ)
	}
	return nil
}

// reservedID refuses a provider event id beginning with gatehouse's
// erasure-notice prefix (schemas.ErasureNoticeIDPrefix, "erasure:"): a
// notice's ce_id is "erasure:<erasure id>:<event id>", so a provider id of
// that form (X-GitHub-Delivery: erasure:1:victim) stored first would make a
// consumer deduplicating by ce_id drop the genuine notice as a repeat.
func reservedID(id string) error {
	if strings.HasPrefix(id, schemas.ErasureNoticeIDPrefix) {
		return fmt.Errorf("%w: event id %q begins with %q, reserved for gatehouse's erasure notices", errBadEnvelope, id, schemas.ErasureNoticeIDPrefix)
	}
	return nil
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

// CheckLengths refuses (errBadEnvelope, naming the field) a record whose
// id, type or aggregate id is longer than its cap: such a row would fail
// in PostgreSQL, and the provider would retry it for days. It also
// refuses an event id of gatehouse's own reserved form (reservedID).
func CheckLengths(rec inbox.Record) error {
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{{"event id", rec.EventID, MaxEventIDBytes}, {"event type", rec.Type, MaxEventTypeBytes}, {"aggregate id", rec.AggregateID, MaxAggregateIDBytes}} {
		if len(f.v) > f.max {
			return fmt.Errorf("%w: %s is %d bytes, longer than %d", errBadEnvelope, f.name, len(f.v), f.max)
		}
	}
	return reservedID(rec.EventID)
}

// parseFields maps a verified delivery of an EnvelopeFields provider: the
// body (a JSON object or array; a form body for a Form kind, stored as a
// JSON object of its fields) becomes the data of an envelope whose id,
// type and creation time come from the kind's fields.
func parseFields(k providers.Kind, h http.Header, body []byte, res signature.Result, now time.Time) (Event, error) {
	data, form := body, k.Form && !gjson.ValidBytes(body)
	if form {
		var err error
		if data, err = formJSON(body, res.Form); err != nil {
			return Event{}, err
		}
	}
	if err := storable(data); err != nil {
		return Event{}, err
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() && !root.IsArray() {
		return Event{}, fmt.Errorf("%w: body is not a JSON object or array", errBadEnvelope)
	}
	src := &source{h: h, root: root, raw: body, signedID: res.EventID}
	id := src.value(k.EventID)
	if id == "" {
		id = res.EventID
	}
	at := receivedAt(now)
	if text, t, ok := schemas.EventTime(src.value(k.CreatedAt)); ok {
		at = eventTime{text, t}
	}
	return wrap(id, src.value(k.EventType), at, data, form)
}

// source is what a delivery's fields are read from: its headers, its
// body (parsed and raw) and the id its signing scheme verified.
type source struct {
	h        http.Header
	root     gjson.Result
	raw      []byte
	signedID string
	tops     [4]topMember // the root's members looked up so far: the first nTops
	nTops    int
}

// topMember is a member of the root object, by name.
type topMember struct {
	name string
	v    gjson.Result
}

// value is the value of the first of fs that is present, "" if none.
func (s *source) value(fs providers.Fields) string {
	for _, f := range fs {
		if v := s.one(f); v != "" {
			return v
		}
	}
	return ""
}

// one is f's value with its replacements applied.
func (s *source) one(f providers.Field) string {
	v := s.raw1(f)
	if len(f.Replace) > 0 && v != "" {
		v = strings.NewReplacer(f.Replace...).Replace(v)
	}
	return v
}

func (s *source) raw1(f providers.Field) string {
	h, raw := s.h, s.raw
	switch {
	case f.Signed:
		return s.signedID
	case f.Header != "":
		return strings.TrimSpace(h.Get(f.Header))
	case f.Path != "":
		return s.path(f.Path)
	case f.Value != "":
		return f.Value
	case f.Digest:
		d := sha256.Sum256(raw)
		return "sha256:" + hex.EncodeToString(d[:])
	case len(f.Join) > 0:
		// The join is present when its first part that is not a constant
		// is: "event" + "." + event.type is absent without event.type, so
		// the next alternative is tried. Later missing parts are left out.
		parts := make([]string, 0, len(f.Join))
		required := true
		for _, j := range f.Join {
			v := s.one(j)
			if j.Value != "" {
				parts = append(parts, v)
				continue
			}
			if v == "" {
				if required {
					return ""
				}
				continue
			}
			required = false
			parts = append(parts, v)
		}
		return strings.Join(parts, ".")
	}
	return ""
}

// formJSON turns an application/x-www-form-urlencoded body into a compact
// JSON object: each field a string, a repeated field an array of strings,
// fields in byte order of their names, strings escaped as encoding/json
// escapes them (<, > and & too), so the bytes are those json.Marshal of
// the fields would give.
func formJSON(body []byte, parsed url.Values) ([]byte, error) {
	vals := parsed // the verifier's, when it parsed the body (Twilio)
	if vals == nil {
		var err error
		if vals, err = url.ParseQuery(string(body)); err != nil {
			return nil, fmt.Errorf("%w: body is neither JSON nor a form", errBadEnvelope)
		}
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	slices.Sort(names)
	out := append(make([]byte, 0, len(body)+8+6*len(vals)), '{')
	for i, k := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(gjson.AppendJSONString(out, k), ':')
		if vs := vals[k]; len(vs) == 1 {
			out = gjson.AppendJSONString(out, vs[0])
		} else {
			out = append(out, '[')
			for j, v := range vs {
				if j > 0 {
					out = append(out, ',')
				}
				out = gjson.AppendJSONString(out, v)
			}
			out = append(out, ']')
		}
	}
	return append(out, '}'), nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// keyPairSchemes sign with the provider's private key; gatehouse holds
// only the public key, so send needs --signing-key.
var keyPairSchemes = map[string]string{
	"discord":  "an Ed25519 seed in hex (64 hex digits)",
	"sendgrid": "a PKCS #8 ECDSA P-256 private key, base64 DER or PEM",
}

// sendRequest is what send signs and posts.
type sendRequest struct {
	header      http.Header
	body        []byte
	contentType string
	signedID    string   // the id the signing scheme puts in its own headers
	notes       []string // what the user should know (printed on stderr)
}

// errCannotCarry is a value the provider's delivery has no place for.
var errCannotCarry = errors.New("cannot carry the value")

// buildDelivery makes the delivery a provider of p's scheme sends for one
// event: its body shape, the event's id, type and creation time where the
// catalogue (or the provider's own event_id, event_type, created_at) reads
// them, and the object id at its aggregate_id_path. Zero values of typ,
// object and id take the scheme's examples; idSet and objectSet say the
// user chose them (for the notes).
func buildDelivery(name string, p *config.Provider, typ, object, id string, now time.Time, objectSet, idSet bool) (*sendRequest, error) {
	k := p.Kind()
	shape := sendShapes[p.Scheme]
	if typ == "" {
		typ = shape.typ
		if typ == "" {
			typ = "test.event"
		}
	}
	if object == "" {
		object = shape.object
		if object == "" {
			object = "obj_123"
		}
	}
	if id == "" {
		id = evtID()
		if shape.id != nil {
			id = shape.id()
		}
	}
	var doc any = obj{}
	if shape.body != nil {
		doc = shape.body(now)
	}
	b := &builder{doc: doc, header: http.Header{}}
	r := &sendRequest{header: b.header, contentType: "application/json"}

	// The object, where the Kafka key is read (a wrapped provider's body
	// and a batch's element are the envelope's data).
	paths := p.AggregateIDPath
	switch {
	case len(paths) == 0:
		if objectSet {
			r.notes = append(r.notes, fmt.Sprintf("provider %s has no aggregate_id_path: its Kafka key is the event id, so --object is not sent", name))
		}
	default:
		path := paths[0]
		if k.Envelope == providers.EnvelopeFields {
			rest, ok := strings.CutPrefix(path, "data.")
			if !ok {
				return nil, fmt.Errorf("provider %s: aggregate_id_path %q is not inside the body (data.…), so send cannot place --object there", name, path)
			}
			path = rest
		}
		b.set(path, object)
	}
	if k.Envelope == providers.EnvelopeBody {
		b.set("type", typ)
		if k.Scheme != "standard-webhooks" { // its id is webhook-id (clerk, resend too)
			b.set("id", id)
		}
		if _, has := b.doc.(obj)["created"]; !has && b.doc.(obj)["timestamp"] == nil && b.doc.(obj)["created_at"] == nil {
			b.set("created_at", now.Format(time.RFC3339Nano))
		}
		r.signedID = id
	} else {
		digest, err := b.fill(k.EventID, id)
		switch {
		case errors.Is(err, errCannotCarry):
			return nil, fmt.Errorf("provider %s (scheme %s) has no place for event id %q", name, p.Scheme, id)
		case digest && idSet:
			r.notes = append(r.notes, fmt.Sprintf("provider %s sends no event id: the receiver records the body's SHA-256 as its id, so --id is not sent", name))
		}
		r.signedID = b.signedID
		if r.signedID == "" {
			r.signedID = id
		}
		if _, err := b.fill(k.EventType, typ); err != nil {
			return nil, fmt.Errorf("provider %s (scheme %s) cannot carry event type %q (%s): choose a type of its own, e.g. %q", name, p.Scheme, typ, describeFields(k.EventType), shape.typ)
		}
		if len(k.CreatedAt) > 0 && !b.present(k.CreatedAt) {
			_, _ = b.fill(k.CreatedAt, now.Format(time.RFC3339))
		}
	}
	if err := b.signedTimestamp(p, now); err != nil {
		return nil, err
	}
	var err error
	switch {
	case k.Form:
		r.contentType = "application/x-www-form-urlencoded"
		r.body, err = formBody(b.doc)
	case k.Batch:
		r.body, err = json.Marshal([]any{b.doc})
	default:
		r.body, err = json.Marshal(b.doc)
	}
	if err != nil {
		return nil, fmt.Errorf("encode the body: %w", err)
	}
	return r, nil
}

// signedTimestamp writes the signed timestamp into the body for a scheme
// that reads it there (Linear's webhookTimestamp).
func (b *builder) signedTimestamp(p *config.Provider, now time.Time) error {
	h, ok := signature.Preset(p.Scheme)
	if p.HMAC != nil {
		h, ok = *p.HMAC, true
	}
	if !ok || h.Timestamp.Path == "" {
		return nil
	}
	var v any = now.Unix()
	switch h.Timestamp.Format {
	case "unix_ms":
		v = now.UnixMilli()
	case "rfc3339":
		v = now.UTC().Format(time.RFC3339Nano)
	}
	b.set(h.Timestamp.Path, v)
	return nil
}

func formBody(doc any) ([]byte, error) {
	m, _ := doc.(obj)
	vals := url.Values{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("form field %s is not text", k)
		}
		vals.Set(k, s)
	}
	return []byte(vals.Encode()), nil
}

func describeFields(fs providers.Fields) string {
	var alts []string
	for _, f := range fs {
		alts = append(alts, describeField(f))
	}
	return "read from " + strings.Join(alts, ", else ")
}

func describeField(f providers.Field) string {
	switch {
	case f.Header != "":
		return "header " + f.Header
	case f.Path != "":
		return "body " + f.Path
	case f.Value != "":
		return "always " + strconv.Quote(f.Value)
	case f.Digest:
		return "the body's digest"
	case f.Signed:
		return "the signed id"
	}
	parts := make([]string, len(f.Join))
	for i, j := range f.Join {
		parts[i] = describeField(j)
	}
	return strings.Join(parts, " + \".\" + ")
}

// builder places an event's values where a provider's fields read them.
type builder struct {
	doc      any // the body (a batch's element), maps and slices
	header   http.Header
	signedID string
}

func (b *builder) set(path string, v any) { b.doc = setPath(b.doc, strings.Split(path, "."), v) }

// setPath sets v at segs of node, making objects (and arrays for numeric
// segments, "entry.0.id") on the way.
func setPath(node any, segs []string, v any) any {
	if len(segs) == 0 {
		return v
	}
	if i, err := strconv.Atoi(segs[0]); err == nil && i >= 0 && i < 64 {
		arr, _ := node.([]any)
		for len(arr) <= i {
			arr = append(arr, nil)
		}
		arr[i] = setPath(arr[i], segs[1:], v)
		return arr
	}
	m, _ := node.(obj)
	if m == nil {
		m = obj{}
	}
	m[segs[0]] = setPath(m[segs[0]], segs[1:], v)
	return m
}

// present reports whether the body already holds one of fs (a shape's
// own creation time, in the provider's format).
func (b *builder) present(fs providers.Fields) bool {
	for _, f := range fs {
		if f.Path != "" && getPath(b.doc, strings.Split(f.Path, ".")) != nil {
			return true
		}
	}
	return false
}

func getPath(node any, segs []string) any {
	for _, s := range segs {
		switch n := node.(type) {
		case obj:
			node = n[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	return node
}

// fill places v at the first of fs that can carry it; digest reports
// that the chosen one is the body's digest (the value is not sent).
func (b *builder) fill(fs providers.Fields, v string) (digest bool, err error) {
	for _, f := range fs {
		if f.Digest {
			return true, nil
		}
		if !carries(f, v) {
			continue
		}
		b.place(f, v)
		return false, nil
	}
	return false, errCannotCarry
}

// carries reports whether field f can hold v: a constant only itself, a
// join only values starting with its constants.
func carries(f providers.Field, v string) bool {
	switch {
	case f.Value != "":
		return f.Value == v
	case len(f.Join) > 0:
		_, ok := splitJoin(f.Join, v)
		return ok
	}
	return v != ""
}

// splitJoin divides v among join's parts: a constant part takes its own
// segment; of the others the first takes every segment but one for each
// later part ("channel.follow" + "notification"), later parts missing
// when v has too few.
func splitJoin(join []providers.Field, v string) ([]string, bool) {
	segs := strings.Split(v, ".")
	out := make([]string, len(join))
	open := 0
	for _, j := range join {
		if j.Value == "" {
			open++
		}
	}
	for i, j := range join {
		if len(segs) == 0 {
			break
		}
		if j.Value != "" {
			if segs[0] != j.Value {
				return nil, false
			}
			out[i], segs = segs[0], segs[1:]
			continue
		}
		n := 1
		if len(segs) > open {
			n = len(segs) - open + 1
		}
		out[i], segs = strings.Join(segs[:n], "."), segs[n:]
		open--
	}
	return out, len(segs) == 0
}

func (b *builder) place(f providers.Field, v string) {
	for i := 0; i+1 < len(f.Replace); i += 2 { // undo what the receiver replaces
		v = strings.ReplaceAll(v, f.Replace[i+1], f.Replace[i])
	}
	switch {
	case f.Signed:
		b.signedID = v
	case f.Header != "":
		b.header.Set(f.Header, v)
	case f.Path != "":
		b.set(f.Path, v)
	case len(f.Join) > 0:
		parts, _ := splitJoin(f.Join, v)
		for i, j := range f.Join {
			if parts[i] != "" && j.Value == "" {
				b.place(j, parts[i])
			}
		}
	}
}

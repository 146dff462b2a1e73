package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas"
)

// parseFields maps a verified delivery of an EnvelopeFields provider: the
// body (a JSON object or array; a form body for a Form kind, stored as a
// JSON object of its fields) becomes the data of an envelope whose id,
// type and creation time come from the kind's fields.
func parseFields(k providers.Kind, h http.Header, body []byte, res signature.Result, now time.Time) (parsed, error) {
	data := body
	if k.Form && !gjson.ValidBytes(body) {
		var err error
		if data, err = formJSON(body); err != nil {
			return parsed{}, err
		}
	}
	if err := storable(data); err != nil {
		return parsed{}, err
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() && !root.IsArray() {
		return parsed{}, fmt.Errorf("%w: body is not a JSON object or array", errBadEnvelope)
	}
	src := source{h: h, root: root, raw: body, signedID: res.EventID}
	id := src.value(k.EventID)
	if id == "" {
		id = res.EventID
	}
	at := receivedAt(now)
	if text, t, ok := schemas.EventTime(src.value(k.CreatedAt)); ok {
		at = eventTime{text, t}
	}
	return wrap(id, src.value(k.EventType), at, data)
}

// source is what a delivery's fields are read from: its headers, its
// body (parsed and raw) and the id its signing scheme verified.
type source struct {
	h        http.Header
	root     gjson.Result
	raw      []byte
	signedID string
}

// value is the value of the first of fs that is present, "" if none.
func (s source) value(fs providers.Fields) string {
	for _, f := range fs {
		if v := s.one(f); v != "" {
			return v
		}
	}
	return ""
}

// one is f's value with its replacements applied.
func (s source) one(f providers.Field) string {
	v := s.raw1(f)
	if len(f.Replace) > 0 && v != "" {
		v = strings.NewReplacer(f.Replace...).Replace(v)
	}
	return v
}

func (s source) raw1(f providers.Field) string {
	h, root, raw := s.h, s.root, s.raw
	switch {
	case f.Signed:
		return s.signedID
	case f.Header != "":
		return strings.TrimSpace(h.Get(f.Header))
	case f.Path != "":
		v, _ := schemas.LookupPath(root, f.Path)
		return v
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

// formJSON turns an application/x-www-form-urlencoded body into a JSON
// object: each field a string, a repeated field an array of strings.
func formJSON(body []byte) ([]byte, error) {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: body is neither JSON nor a form", errBadEnvelope)
	}
	obj := make(map[string]any, len(vals))
	for k, vs := range vals {
		if len(vs) == 1 {
			obj[k] = vs[0]
		} else {
			obj[k] = vs
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("form body: %w", err)
	}
	return b, nil
}

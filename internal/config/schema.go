package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Key is one key of the configuration file, as docs/CONFIG.md, the JSON
// Schema (schemas/gatehouse.config.schema.json) and `gatehouse config
// defaults` state it. Keys walks the Config structs' yaml tags, so a field
// added to a struct is a key at once; its description is the field's doc
// comment (keydocs_gen.go, written by `go generate ./internal/config`),
// and the rest comes from the per-key registry (keys.go).
type Key struct {
	// Path is the YAML path: "storage.retention",
	// "providers.<name>.secrets[].value" ("[]": every element of a list,
	// "<name>": every entry of a map).
	Path string
	// Field is the Go field that holds the key: "settings.Ingest.MaxInFlight".
	Field string
	// Type is the YAML type: string, integer, number, boolean, duration,
	// object, "list of …", "map of …".
	Type string
	// Env is the environment variable that overrides the key, if any.
	Env string
	// Default is the value config.Parse applies when the key is absent,
	// as YAML text ("" when there is none or it is DefaultNote's).
	Default string
	// DefaultNote states a default that depends on other keys or is
	// applied by the stage that uses the key.
	DefaultNote string
	// Required says when the key must be set ("" when never).
	Required string
	// Allowed lists the values the key accepts, when they are few.
	Allowed []string
	// Secret: the value is a secret or a secret reference (env:NAME,
	// file:/path); `gatehouse config check` redacts it.
	Secret bool
	// Description is the key's one-line description.
	Description string
	// Recursive: the key's elements are of the type of an enclosing key
	// (providers.<name>.event_id[].join).
	Recursive bool
}

// Section reports whether the key holds other keys (an object, a list or
// map of objects).
func (k Key) Section() bool {
	return k.Type == "object" || k.Type == "list of objects" || k.Type == "map of objects" || k.Type == "list of fields"
}

// minimal is the smallest configuration that gives every section an
// element, so Keys can read the defaults config.Parse applies inside
// lists and maps too.
const minimal = `
providers:
  example:
    scheme: reference
    timestamp_header: X-Timestamp
    signature_header: X-Signature
    secrets: [{value: example}]
    forward: [{url: "https://example.com/hook", secret: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]
auth:
  encryption_keys: [{value: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}]
api:
  audience: example
  issuers: [{issuer: "https://issuer.example.com/"}]
  operators: [{issuer: "https://issuer.example.com/", subject: example}]
`

// Keys returns every key of the configuration file, in the order of the
// structs' fields, with the defaults config.Parse applies.
func Keys() []Key { return KeysDescribedBy(fieldDocs) }

// KeysDescribedBy is Keys with the descriptions of the fields taken from
// docs ("settings.Ingest.MaxInFlight" → one line): the generator's, read
// from the doc comments of the source it regenerates keydocs_gen.go from.
func KeysDescribedBy(docs map[string]string) []Key {
	def, err := Parse([]byte(minimal), func(string) string { return "" })
	if err != nil {
		panic("config: the minimal configuration does not parse: " + err.Error())
	}
	// What the minimal file sets is no default: raw is the file without
	// Parse's defaults, and a key is read from def only where raw is zero.
	var raw Config
	if err := yaml.Unmarshal([]byte(minimal), &raw); err != nil {
		panic("config: the minimal configuration does not decode: " + err.Error())
	}
	var out []Key
	walk(reflect.TypeOf(Config{}), reflect.ValueOf(def).Elem(), reflect.ValueOf(raw), "", nil, &out)
	for i := range out {
		k := &out[i]
		m := keyMeta[k.Path]
		k.Env, k.Required, k.Allowed, k.Secret = m.env, m.required, m.allowed, m.secret
		if m.defaultNote != "" {
			// Inside a list or map the example's value depends on its
			// position or name; elsewhere a note must not hide Parse's.
			if k.Default != "" && !strings.Contains(k.Path, "[]") && !strings.Contains(k.Path, "<name>") {
				panic("config: " + k.Path + " has a default note, but Parse applies " + k.Default)
			}
			k.Default, k.DefaultNote = "", m.defaultNote
		}
		k.Description = docs[k.Field]
		if m.doc != "" {
			k.Description = m.doc
		}
	}
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

// walk appends the keys of struct type t below prefix: v is its value
// after Parse and r the value as the minimal file set it (either invalid
// when the minimal file has none); stack holds the enclosing struct types.
func walk(t reflect.Type, v, r reflect.Value, prefix string, stack []reflect.Type, out *[]Key) {
	stack = append(stack, t)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		var fv, rv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		if r.IsValid() {
			rv = r.Field(i)
		}
		k := Key{Path: path, Field: goName(t) + "." + f.Name}
		ft := f.Type
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() != reflect.Struct {
			ft = ft.Elem()
			fv, rv = deref(fv), deref(rv)
		}
		k.Type = typeName(ft)
		var elem reflect.Type
		var ev, er reflect.Value
		below := path
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			elem, ev, er = ft, fv, rv
		case ft.Kind() == reflect.Pointer:
			elem, ev, er = ft.Elem(), deref(fv), deref(rv)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			elem, below = ft.Elem(), path+"[]"
			ev, er = first(fv), first(rv)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Pointer:
			elem, below = ft.Elem().Elem(), path+".<name>"
			ev, er = deref(first(fv)), deref(first(rv))
		case !rv.IsValid() || rv.IsZero():
			k.Default = defaultText(fv)
		}
		if elem != nil && slices.Contains(stack, elem) {
			k.Recursive = true
			elem = nil
		}
		*out = append(*out, k)
		if elem != nil {
			walk(elem, ev, er, below, stack, out)
		}
	}
}

// first is the first element of a list, or the entry of a map (the
// minimal file's maps have one), or the invalid value.
func first(v reflect.Value) reflect.Value {
	switch {
	case !v.IsValid() || v.Len() == 0:
		return reflect.Value{}
	case v.Kind() == reflect.Map:
		return v.MapIndex(v.MapKeys()[0])
	}
	return v.Index(0)
}

func deref(v reflect.Value) reflect.Value {
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		if v.IsValid() && v.Kind() != reflect.Pointer {
			return v
		}
		return reflect.Value{}
	}
	return v.Elem()
}

// goName is "config.Ingest" for a struct type of this module.
func goName(t reflect.Type) string {
	pkg := t.PkgPath()
	return pkg[strings.LastIndex(pkg, "/")+1:] + "." + t.Name()
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Name() == "Fields" || t.Kind() == reflect.Slice && t.Elem().Name() == "Field":
		return "list of fields"
	case t.Name() == "Conditions":
		return "conditions"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct, reflect.Pointer:
		return "object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of objects"
		}
		return "list of " + plural(typeName(t.Elem()))
	case reflect.Map:
		if t.Elem().Kind() == reflect.Pointer {
			return "map of objects"
		}
		return "map of " + plural(typeName(t.Elem()))
	}
	return t.Kind().String()
}

func plural(s string) string {
	if strings.HasPrefix(s, "list of ") {
		return "lists of " + strings.TrimPrefix(s, "list of ")
	}
	return s + "s"
}

// defaultText is v as YAML text; "" for a zero value other than false
// (zero means "unset" to every applyDefaults).
func defaultText(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if v.Kind() == reflect.Bool {
		return strconv.FormatBool(v.Bool())
	}
	if v.IsZero() || (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
		return ""
	}
	return yamlText(v)
}

func yamlText(v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		return FormatDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.String:
		return quoteIfNeeded(v.String())
	case v.Kind() == reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = yamlText(v.Index(i))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case v.Kind() == reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		parts := make([]string, len(keys))
		for i, mk := range keys {
			parts[i] = mk.String() + ": " + yamlText(v.MapIndex(mk))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v.Interface())
}

// quoteIfNeeded quotes s when YAML would read it as something other than
// that string (a number, a boolean, a flow character…).
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`") || strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.Quote(s)
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return strconv.Quote(s)
	}
	return s
}

// FormatDuration writes d as the shortest text time.ParseDuration reads
// back: "720h", "5m", "1m30s", "500ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

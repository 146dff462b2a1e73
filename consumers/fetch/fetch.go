// Package fetch is the consumers' provider API client: the declarative
// fetch rules (Fetcher) that read the authoritative object an event is
// about, the API client (auth, throttling, coalescing per batch, url_from
// addresses kept below the api_url) and the object's version.
package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// Fetcher is the declarative authoritative fetch of one provider: the
// first rule (providers.Fetch) whose types and when-values match an event
// reads the object the event is about from the provider's API, and the
// object, with the version the rule names, is the event's effect. An event
// no rule matches, or whose rule is a skip, has no effect (skipped).
type Fetcher struct {
	rules      []providers.Fetch
	api        *APIClient
	apiVersion string
}

// NewFetcher returns the fetcher of rules (validated: providers.Fetch.Validate)
// reading through api; apiVersion fills {api_version}. It fails on an
// invalid rule.
func NewFetcher(rules []providers.Fetch, api *APIClient, apiVersion string) (*Fetcher, error) {
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("fetch[%d].%w", i, err)
		}
	}
	return &Fetcher{rules: rules, api: api, apiVersion: apiVersion}, nil
}

// Rule returns the rule deciding ev, nil when none matches.
func (f *Fetcher) Rule(ev *event.Event) *providers.Fetch {
	var doc gjson.Result
	parsed := false
	for i := range f.rules {
		r := &f.rules[i]
		if !r.Matches(ev.Type) {
			continue
		}
		if len(r.When) > 0 {
			if !parsed {
				doc, parsed = gjson.ParseBytes(ev.StoredEnvelope()), true
			}
			if !whenHolds(doc, r.When) {
				continue
			}
		}
		return r
	}
	return nil
}

func whenHolds(doc gjson.Result, when schemas.Conditions) bool { return when.Holds(doc) }

// Handle fetches ev's object per its rule, one request per object in the
// batch b (its memo); nil effect when no rule reads one.
func (f *Fetcher) Handle(ctx context.Context, ev *event.Event, b *event.Batch) (*event.Effect, error) {
	r := f.Rule(ev)
	if r == nil || r.Skip != "" {
		return nil, nil
	}
	return f.fetch(ctx, ev, r, b.Memo())
}

var placeholderRE = regexp.MustCompile(`\{([^{}]+)\}`)

// expand fills a template's placeholders from the envelope; with segment
// set each value is escaped as part of one path segment and must not be
// empty, "." or "..".
func (f *Fetcher) expand(doc gjson.Result, tmpl string, escape func(string) string, ev *event.Event) (string, string, error) {
	var last string
	var err error
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		p := m[1 : len(m)-1]
		v, ok := "", false
		if p == "api_version" {
			v, ok = f.apiVersion, f.apiVersion != ""
		} else {
			v, ok = schemas.LookupPath(doc, p)
		}
		if !ok && err == nil {
			err = event.Permanentf("event %s: %s missing", ev.Type, p)
		}
		if (v == "." || v == "..") && err == nil {
			err = event.Permanentf("event %s: %s = %q cannot name an object in a URL path", ev.Type, p, v)
		}
		if p != "api_version" {
			last = v
		}
		return escape(v)
	})
	return out, last, err
}

func (f *Fetcher) fetch(ctx context.Context, ev *event.Event, r *providers.Fetch, memo *event.Memo) (*event.Effect, error) {
	doc := gjson.ParseBytes(ev.StoredEnvelope())
	path, last, err := f.target(doc, r, ev)
	if err != nil {
		return nil, err
	}
	query := ""
	if len(r.Query) > 0 {
		q := url.Values{}
		for k, tmpl := range r.Query {
			v, _, err := f.expand(doc, tmpl, func(s string) string { return s }, ev)
			if err != nil {
				return nil, err
			}
			q.Set(k, v)
		}
		query = q.Encode()
	}
	key := last
	if r.Key != "" {
		if key, _, err = f.expand(doc, r.Key, func(s string) string { return s }, ev); err != nil {
			return nil, err
		}
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	var body []byte
	if r.GraphQL != "" {
		method = http.MethodPost
		if body, err = f.graphQLBody(doc, r, ev); err != nil {
			return nil, err
		}
	}
	a, err := f.api.request(ctx, memo, method, path, query, body)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && (slices.Contains(r.Retry, ae.Status) || retriedError(r, ae.raw)) {
			return nil, ae // a status or error code the rule retries: transient
		}
		return nil, err
	}
	if r.AnswerError != "" {
		if code, ok := schemas.LookupPathJSON(a.body, r.AnswerError); ok {
			err := fmt.Errorf("%s %s: the answer's %s is %q", method, path, r.AnswerError, code)
			if slices.Contains(r.RetryErrors, code) {
				return nil, err
			}
			return nil, event.Permanent(err)
		}
	}
	obj := a.body
	if r.Answer != "" {
		m := gjson.GetBytes(a.body, gjsonPath(r.Answer))
		if !m.IsObject() {
			return nil, event.Permanentf("%s %s: the answer has no object at %s", method, path, r.Answer)
		}
		obj = json.RawMessage(m.Raw)
	}
	v, err := objectVersionOf(obj, a, r.Version)
	if err != nil {
		return nil, event.Permanentf("%s %s: %w", r.Object, key, err)
	}
	return &event.Effect{ObjectType: r.Object, ObjectID: key, Version: v, Data: obj}, nil
}

// target is the request path of r for the event, and the value that keys
// the object by default: the URL template's last value, or url_from's URL.
func (f *Fetcher) target(doc gjson.Result, r *providers.Fetch, ev *event.Event) (string, string, error) {
	if r.URLFrom == "" {
		return f.expand(doc, r.URL, url.PathEscape, ev)
	}
	abs, ok := schemas.LookupPath(doc, r.URLFrom)
	if !ok {
		return "", "", event.Permanentf("event %s: %s missing", ev.Type, r.URLFrom)
	}
	path, err := f.api.below(abs)
	return path, abs, err
}

// graphQLBody is the JSON body of a GraphQL rule: the document and its
// variables, each a JSON string.
func (f *Fetcher) graphQLBody(doc gjson.Result, r *providers.Fetch, ev *event.Event) ([]byte, error) {
	vars := make(map[string]string, len(r.Variables))
	for k, tmpl := range r.Variables {
		v, _, err := f.expand(doc, tmpl, func(s string) string { return s }, ev)
		if err != nil {
			return nil, err
		}
		vars[k] = v
	}
	b, err := json.Marshal(struct {
		Query     string            `json:"query"`
		Variables map[string]string `json:"variables"`
	}{r.GraphQL, vars})
	if err != nil {
		return nil, event.Permanentf("graphql body: %w", err)
	}
	return b, nil
}

// retriedError reports whether a non-2xx answer carries an error the rule
// retries (answer_error's value among retry_errors).
func retriedError(r *providers.Fetch, raw []byte) bool {
	if r.AnswerError == "" || len(r.RetryErrors) == 0 {
		return false
	}
	code, ok := schemas.LookupPathJSON(raw, r.AnswerError)
	return ok && slices.Contains(r.RetryErrors, code)
}

// gjsonPath escapes a LookupPath path for gjson (whose path syntax gives
// meaning to *, ?, # and others).
func gjsonPath(p string) string {
	parts := strings.Split(p, ".")
	for i, s := range parts {
		parts[i] = gjson.Escape(s)
	}
	return strings.Join(parts, ".")
}

// objectVersionOf reads the version of obj: the first source of sources
// present (a path into obj holding an integer or a time, "etag", "fetched").
// An opaque ETag (not a decimal number) orders nothing: the next source
// decides, so [etag, fetched] takes the fetch time for it.
func objectVersionOf(obj json.RawMessage, a answer, sources []string) (int64, error) {
	if !gjson.ValidBytes(obj) || !gjson.ParseBytes(obj).IsObject() {
		return 0, errors.New("object is not a JSON object")
	}
	doc := gjson.ParseBytes(obj)
	opaque := ""
	for _, s := range sources {
		switch s {
		case providers.VersionFetched:
			return a.at.UnixMicro(), nil
		case providers.VersionETag:
			tag := strings.Trim(strings.TrimPrefix(a.header.Get("ETag"), "W/"), `"`)
			if tag == "" {
				continue
			}
			n, err := strconv.ParseInt(tag, 10, 64)
			if err != nil {
				opaque = tag // not ordered: the next source decides
				continue
			}
			return n, nil
		}
		v, ok := schemas.LookupPath(doc, s)
		if !ok {
			continue
		}
		return parseVersion(s, v)
	}
	if opaque != "" {
		return 0, fmt.Errorf("etag %q is not a decimal version and no later source of %s gives one (add fetched after etag)",
			opaque, strings.Join(sources, ", "))
	}
	return 0, fmt.Errorf("object has none of %s", strings.Join(sources, ", "))
}

// parseVersion reads an integer, or a time (RFC 3339, RFC 1123 with a
// numeric zone as Twilio's date_updated) as Unix microseconds.
func parseVersion(name, v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC1123Z, time.RFC1123} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("%s %q is neither an integer nor an RFC 3339 or RFC 1123 time", name, v)
}

// Catalogue returns the fetcher of the catalogue's rules of scheme
// (providers.Kind.API.Fetch) reading through api: for "reference",
// GET {api}/v1/payments/<data.payment_id> for payment.* and
// /v1/invoices/<data.invoice_id> for invoice.*, the version being the
// object's "version" (an integer), or else its "updated_at" (RFC 3339, as
// Unix microseconds); for "stripe", every event whose data.object is a
// payment_intent, charge, invoice, customer, subscription, refund or
// checkout.session reads it with GET {api}/v1/<collection>/<id>, the
// version being the fetch time in Unix microseconds (Stripe objects carry
// none: a later fetch sees a state at least as new, and the guard keeps a
// slower, older fetch from overwriting it). It panics on rules the
// catalogue's tests keep valid.
func Catalogue(scheme string, api *APIClient) *Fetcher {
	k, _ := providers.Lookup(scheme)
	f, err := NewFetcher(k.API.Fetch, api, api.version)
	if err != nil {
		panic(fmt.Sprintf("catalogue rules of %s: %v", scheme, err)) // providers' tests keep them valid
	}
	return f
}

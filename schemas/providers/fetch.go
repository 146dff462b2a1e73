package providers

import (
	"errors"
	"fmt"
	"github.com/gatehouse/gatehouse/schemas"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// API says how the consumers read a provider's objects (the authoritative
// fetch: a webhook is a notification, not a command). The catalogue's
// entries are defaults; providers.<name>.fetch in YAML adds rules tried
// before them.
type API struct {
	// Reference is the provider's API reference the rules follow.
	Reference string
	// Auth is how api_key is sent: AuthBearer (the default: Authorization:
	// Bearer <key>), AuthBot (Authorization: Bot <key>, Discord's bot
	// tokens), AuthBasic (the key is "user:password"), AuthHeader (the key
	// as it is in the header AuthHeader, e.g. X-Shopify-Access-Token) or
	// AuthNone.
	Auth       string
	AuthHeader string
	// Accept is every call's Accept header; default application/json
	// (Lemon Squeezy's JSON:API wants application/vnd.api+json).
	Accept string
	// VersionHeader carries api_version on every call; default Api-Version.
	VersionHeader string
	// Fetch are the rules, tried in order; the first whose Types and When
	// match an event decides what happens to it.
	Fetch []Fetch
	// EventOnly, when set, says why the provider has no fetch rules (its
	// events are the data; no API returns them).
	EventOnly string
}

// Auth kinds of API.Auth.
const (
	AuthBearer = "bearer"
	AuthBot    = "bot"
	AuthBasic  = "basic"
	AuthHeader = "header"
	AuthNone   = "none"
)

// Version sources of Fetch.Version besides a path into the answer.
const (
	// VersionETag is the answer's ETag when it is a decimal number (W/ and
	// quotes removed); an opaque ETag is not ordered, so the next version
	// source decides ([etag, fetched]: the fetch time), and with none after
	// it the event fails permanently.
	VersionETag = "etag"
	// VersionFetched is the time the request was sent, in Unix
	// microseconds: a later fetch saw a state at least as new (Stripe's
	// objects carry no version).
	VersionFetched = "fetched"
)

// Fetch is one declarative fetch rule: for which events, which object, the
// request that reads it, where its version is, and which answers are
// permanent. Paths use schemas.LookupPath's language (dotted members,
// decimal array indexes) and start at the stored envelope ("data.issue.number").
type Fetch struct {
	// Types are event type patterns: exact ("issues.opened"), a prefix
	// ending in ".*" ("issues.*") or "*". Required.
	Types []string `yaml:"types"`
	// When requires envelope values: path → a condition (schemas.Conditions:
	// the exact value, e.g. data.object.object: subscription, or equals, in,
	// exists, prefix). Optional.
	When schemas.Conditions `yaml:"when"`
	// Skip, when set, records the matching events as skipped and says why
	// (the events carry no object to fetch). The other fields are unused.
	Skip string `yaml:"skip"`
	// Object is the object type stored in provider_objects. Required
	// unless Skip.
	Object string `yaml:"object"`
	// Key is the object's key in provider_objects, a template as URL's
	// (each {path} an envelope value, not escaped); it must be unique
	// among the provider's objects of every type (GitHub: "{data.issue.node_id}",
	// HubSpot: "contact/{data.objectId}"). Default: the value of the URL's
	// last placeholder.
	Key string `yaml:"key"`
	// Method is GET (the default) or POST, sent without a body (the query
	// and the URL carry every input).
	Method string `yaml:"method"`
	// URL is the request's path below api_url, each {path} placeholder
	// replaced by that envelope value escaped as part of ONE path segment
	// (url.PathEscape: "a/b" is a%2Fb); a value that is missing, empty,
	// "." or ".." fails the event permanently without a request.
	// {api_version} is the provider's api_version. Required unless Skip or
	// URLFrom.
	URL string `yaml:"url"`
	// URLFrom, instead of URL, is the path of an absolute URL in the
	// envelope (Calendly's data.payload.uri). It is requested only when its
	// scheme, host and port are api_url's and its path lies below
	// api_url's path, with no user info, query or fragment; any other URL
	// fails the event permanently without a request: a payload never
	// chooses where the API key goes. The default Key is the URL.
	URLFrom string `yaml:"url_from"`
	// GraphQL is a query document: the request is POST URL with the JSON
	// body {"query": GraphQL, "variables": Variables} (Linear's /graphql).
	// Variables' values are templates as Key's, each sent as a JSON
	// string; GraphQL rules need Key and at least one variable.
	GraphQL   string            `yaml:"graphql"`
	Variables map[string]string `yaml:"variables"`
	// AnswerError is a path in the answer whose presence means the call
	// failed even with a 2xx status (Slack's "error" beside "ok": false;
	// GraphQL's errors.0.extensions.code); its value is the error, and the
	// event fails permanently unless RetryErrors lists it. It is read from
	// non-2xx answers too, so a listed value retries a 4xx (Linear answers
	// a rate-limited query 400 with code RATELIMITED).
	AnswerError string   `yaml:"answer_error"`
	RetryErrors []string `yaml:"retry_errors"`
	// Query are query parameters, their values templates as URL's.
	Query map[string]string `yaml:"query"`
	// Answer is the path of the object in the answer (Square's "payment",
	// Shopify's "order"); "" is the whole answer.
	Answer string `yaml:"answer"`
	// Version are alternatives, the first present wins: a path into the
	// object (an integer, or an RFC 3339 / RFC 1123 time as Unix
	// microseconds), VersionETag or VersionFetched. Required unless Skip.
	Version []string `yaml:"version"`
	// Retry are 4xx statuses retried like 5xx (e.g. 409). 408, 429, 5xx,
	// timeouts and network errors are always transient; every other
	// non-2xx answer (404 and 410 first among them, a 3xx never followed)
	// is permanent: the event is dead-lettered at once.
	Retry []int `yaml:"retry"`
}

var placeholder = regexp.MustCompile(`\{([^{}]+)\}`)

// Placeholders lists the envelope paths the URL, query and variable
// templates name (not {api_version}).
func (f Fetch) Placeholders() []string {
	var out []string
	tmpls := []string{f.URL}
	for _, m := range []map[string]string{f.Query, f.Variables} {
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			tmpls = append(tmpls, m[k])
		}
	}
	for _, t := range tmpls {
		for _, m := range placeholder.FindAllStringSubmatch(t, -1) {
			if m[1] != "api_version" {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// MatchType reports whether event type typ matches pattern: exact, a
// prefix ending in ".*", or "*".
func MatchType(pattern, typ string) bool {
	if pattern == "*" || pattern == typ {
		return true
	}
	p, ok := strings.CutSuffix(pattern, ".*")
	return ok && strings.HasPrefix(typ, p+".")
}

// Matches reports whether one of f's Types matches typ.
func (f Fetch) Matches(typ string) bool {
	return slices.ContainsFunc(f.Types, func(p string) bool { return MatchType(p, typ) })
}

// Validate checks a rule: types present, and unless Skip an object, a URL
// template below api_url whose every placeholder fills a whole or part of
// one path segment, a version source and a method of GET or POST.
func (f Fetch) Validate() error {
	if len(f.Types) == 0 {
		return errors.New("types: at least one event type pattern is required")
	}
	for _, p := range f.Types {
		if p == "" || (strings.Contains(p, "*") && p != "*" && !strings.HasSuffix(p, ".*")) || strings.Count(p, "*") > 1 {
			return fmt.Errorf("types: %q is not an exact type, a prefix ending in .* or *", p)
		}
	}
	if f.Skip != "" {
		return nil
	}
	if f.Object == "" {
		return errors.New("object: the object type is required (or skip: with the reason)")
	}
	if err := f.validateRequest(); err != nil {
		return err
	}
	if len(f.Version) == 0 {
		return errors.New("version: say where the object's version is (a path such as updated_at, etag or fetched)")
	}
	if f.Method != "" && f.Method != "GET" && f.Method != "POST" {
		return fmt.Errorf("method: %q is not GET or POST", f.Method)
	}
	if len(f.RetryErrors) > 0 && f.AnswerError == "" {
		return errors.New("retry_errors: needs answer_error (the path of the error in the answer)")
	}
	for _, s := range f.Retry {
		if s < 400 || s > 499 {
			return fmt.Errorf("retry: %d is not a 4xx status (5xx, 408 and 429 are always retried)", s)
		}
	}
	return nil
}

// validateRequest checks the request half of a rule: a URL template or
// URLFrom, and a GraphQL document's variables and key.
func (f Fetch) validateRequest() error {
	switch {
	case f.URL != "" && f.URLFrom != "":
		return errors.New("url, url_from: set one")
	case f.URLFrom != "":
		if strings.ContainsAny(f.URLFrom, "{}/?#") {
			return fmt.Errorf("url_from: %q is not an envelope path (data.payload.uri)", f.URLFrom)
		}
		if f.GraphQL != "" {
			return errors.New("url_from: a GraphQL rule posts to its url")
		}
		return nil
	}
	if !strings.HasPrefix(f.URL, "/") || strings.ContainsAny(f.URL, "?#") {
		return fmt.Errorf("url: %q must be a path below api_url starting with / (query in query:)", f.URL)
	}
	rest := placeholder.ReplaceAllString(f.URL, "x")
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("url: %q has an unbalanced brace", f.URL)
	}
	for _, seg := range strings.Split(f.URL[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("url: %q has an empty, . or .. segment", f.URL)
		}
	}
	if f.GraphQL != "" {
		if f.Method != "" && f.Method != "POST" {
			return fmt.Errorf("method: a GraphQL rule is a POST, not %q", f.Method)
		}
		if len(f.Variables) == 0 || f.Key == "" {
			return errors.New("graphql: needs variables (the object's id from the envelope) and key")
		}
	} else if len(f.Variables) > 0 {
		return errors.New("variables: only a graphql rule has variables")
	}
	if len(f.Placeholders()) == 0 {
		return fmt.Errorf("url: %q names no envelope value ({data.id}) and neither do query or variables", f.URL)
	}
	if !placeholder.MatchString(f.URL) && f.Key == "" {
		return fmt.Errorf("key: the url %q names no value to key the object by: set key", f.URL)
	}
	return nil
}

// Validate checks the auth kind and every rule.
func (a API) Validate() error {
	switch a.Auth {
	case "", AuthBearer, AuthBot, AuthBasic, AuthNone:
	case AuthHeader:
		if a.AuthHeader == "" {
			return errors.New("auth: header needs auth_header")
		}
	default:
		return fmt.Errorf("auth: %q is not bearer, bot, basic, header or none", a.Auth)
	}
	for i, f := range a.Fetch {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("fetch[%d].%w", i, err)
		}
	}
	return nil
}

// Describe says, for people, what a rule does: "issues.* → GET
// /repos/{…}/issues/{…} (issue, version updated_at)".
func (f Fetch) Describe() string {
	types := strings.Join(f.Types, ", ")
	if len(f.When) > 0 {
		types += " when " + f.When.String()
	}
	if f.Skip != "" {
		return types + ": skipped (" + f.Skip + ")"
	}
	m := f.Method
	if m == "" {
		m = "GET"
	}
	u := f.URL
	if f.URLFrom != "" {
		u = "{" + f.URLFrom + "} (an api_url address only)"
	}
	if f.GraphQL != "" {
		m = "POST"
		op, _, _ := strings.Cut(strings.Join(strings.Fields(f.GraphQL), " "), "(")
		vars := make([]string, 0, len(f.Variables))
		for _, k := range slices.Sorted(maps.Keys(f.Variables)) {
			vars = append(vars, k+"="+f.Variables[k])
		}
		u += " (GraphQL " + strings.TrimSpace(op) + ", " + strings.Join(vars, ", ") + ")"
	}
	if len(f.Query) > 0 {
		q := make([]string, 0, len(f.Query))
		for _, k := range slices.Sorted(maps.Keys(f.Query)) {
			q = append(q, url.QueryEscape(k)+"="+f.Query[k]) // the template as written: {path}, not %7Bpath%7D
		}
		u += "?" + strings.Join(q, "&")
	}
	ans := ""
	if f.Answer != "" {
		ans = ", in answer." + f.Answer
	}
	if f.AnswerError != "" {
		ans += ", failed when the answer has " + f.AnswerError
	}
	return fmt.Sprintf("%s → %s %s (%s%s, version %s)", types, m, u, f.Object, ans, strings.Join(f.Version, ", else "))
}

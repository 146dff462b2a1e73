package providers

import (
	"strings"
	"testing"
)

// Every catalogue rule is valid, and every provider with an API names its
// reference.
func TestCatalogueFetchRulesAreValid(t *testing.T) {
	for _, name := range Names() {
		k, _ := Lookup(name)
		if err := k.API.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(k.API.Fetch) > 0 && k.API.Reference == "" {
			t.Errorf("%s: fetch rules without an API reference", name)
		}
	}
	for _, name := range []string{"github", "shopify", "square", "paddle", "hubspot", "twilio", "stripe", "reference",
		"bitbucket", "lemonsqueezy", "calendly", "linear", "slack", "discord"} {
		k, _ := Lookup(name)
		if len(k.API.Fetch) < 2 {
			t.Errorf("%s: no default fetch rules", name)
		}
	}
	if k, _ := Lookup("sendgrid"); k.API.EventOnly == "" {
		t.Error("sendgrid: should say it is event-only")
	}
	// A provider's rules end with a skip rule for "*" that says why, so no
	// event of a configured provider is skipped without its configuration
	// saying so.
	for _, name := range Names() {
		k, _ := Lookup(name)
		if n := len(k.API.Fetch); n > 0 && (k.API.Fetch[n-1].Skip == "" || !k.API.Fetch[n-1].Matches("anything.else")) {
			t.Errorf("%s: the last rule is not a stated skip for every other event", name)
		}
	}
}

func TestFetchValidate(t *testing.T) {
	ok := Fetch{Types: []string{"issues.*"}, Object: "issue", URL: "/repos/{data.a}/{data.b}.json", Version: []string{"updated_at"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		f    func(*Fetch)
		want string
	}{
		"no types":            {func(f *Fetch) { f.Types = nil }, "types"},
		"bad pattern":         {func(f *Fetch) { f.Types = []string{"iss*"} }, "types"},
		"no object":           {func(f *Fetch) { f.Object = "" }, "object"},
		"relative url":        {func(f *Fetch) { f.URL = "repos/{data.a}" }, "url"},
		"query in url":        {func(f *Fetch) { f.URL = "/repos/{data.a}?x=1" }, "url"},
		"dotdot":              {func(f *Fetch) { f.URL = "/repos/../{data.a}" }, "url"},
		"no value":            {func(f *Fetch) { f.URL = "/repos/x" }, "url"},
		"unbalanced":          {func(f *Fetch) { f.URL = "/repos/{data.a" }, "url"},
		"no version":          {func(f *Fetch) { f.Version = nil }, "version"},
		"bad method":          {func(f *Fetch) { f.Method = "DELETE" }, "method"},
		"retry 5xx":           {func(f *Fetch) { f.Retry = []int{503} }, "retry"},
		"url and url_from":    {func(f *Fetch) { f.URLFrom = "data.uri" }, "url, url_from"},
		"url_from not a path": {func(f *Fetch) { f.URL, f.URLFrom = "", "{data.uri}" }, "url_from"},
		"url_from graphql": {func(f *Fetch) {
			f.URL, f.URLFrom, f.GraphQL, f.Variables, f.Key = "", "data.uri", "query { x }", map[string]string{"id": "{data.a}"}, "k"
		}, "url_from"},
		"graphql no key": {func(f *Fetch) {
			f.URL, f.GraphQL, f.Variables = "/graphql", "query { x }", map[string]string{"id": "{data.a}"}
		}, "graphql"},
		"graphql no variables": {func(f *Fetch) { f.URL, f.GraphQL, f.Key = "/graphql", "query { x }", "k" }, "graphql"},
		"graphql get": {func(f *Fetch) {
			f.URL, f.GraphQL, f.Variables, f.Key, f.Method = "/graphql", "query { x }", map[string]string{"id": "{data.a}"}, "k", "GET"
		}, "method"},
		"variables without graphql": {func(f *Fetch) { f.Variables = map[string]string{"id": "{data.a}"} }, "variables"},
		"query value without key":   {func(f *Fetch) { f.URL, f.Query = "/info", map[string]string{"id": "{data.a}"} }, "key"},
		"retry_errors alone":        {func(f *Fetch) { f.RetryErrors = []string{"RATELIMITED"} }, "retry_errors"},
	} {
		f := ok
		tc.f(&f)
		if err := f.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %s", name, err, tc.want)
		}
	}
	if err := (Fetch{Types: []string{"*"}, Skip: "no object"}).Validate(); err != nil {
		t.Errorf("skip rule: %v", err)
	}
	for name, f := range map[string]Fetch{
		"url_from": {Types: []string{"*"}, Object: "o", URLFrom: "data.payload.uri", Version: []string{"updated_at"}},
		"graphql": {Types: []string{"*"}, Object: "o", Key: "o/{data.id}", URL: "/graphql", GraphQL: "query($id: String!) { o(id: $id) { id } }",
			Variables: map[string]string{"id": "{data.id}"}, Version: []string{"updatedAt"}, AnswerError: "errors.0.extensions.code",
			RetryErrors: []string{"RATELIMITED"}},
		"query value": {Types: []string{"*"}, Object: "o", Key: "{data.id}", URL: "/o.info", Query: map[string]string{"o": "{data.id}"},
			Version: []string{"fetched"}, AnswerError: "error"},
	} {
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMatchType(t *testing.T) {
	for _, tc := range []struct {
		p, typ string
		want   bool
	}{
		{"*", "a.b", true}, {"a.b", "a.b", true}, {"a.*", "a.b", true}, {"a.*", "a.b.c", true},
		{"a.*", "ab.c", false}, {"a.*", "a", false}, {"a.b", "a.c", false},
	} {
		if got := MatchType(tc.p, tc.typ); got != tc.want {
			t.Errorf("MatchType(%q, %q) = %v", tc.p, tc.typ, got)
		}
	}
}

// Lookup hands out copies: changing a returned rule changes nothing else.
func TestLookupCopiesFetchRules(t *testing.T) {
	k, _ := Lookup("github")
	k.API.Fetch[0].Types[0] = "changed"
	k.API.Fetch[0].URL = "/changed"
	again, _ := Lookup("github")
	if again.API.Fetch[0].Types[0] == "changed" || again.API.Fetch[0].URL == "/changed" {
		t.Fatal("Lookup shares its rules")
	}
}

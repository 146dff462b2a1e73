package config

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/redact"
)

const fwdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// A provider's own fetch rules come before the catalogue's; forward gets
// its defaults and a resolved secret; api_auth replaces the catalogue's.
func TestFetchAndForwardFromYAML(t *testing.T) {
	cfg, err := Parse([]byte(valid+`    api_url: https://api.example.com
    api_auth: header
    api_auth_header: X-Key
    fetch:
      - types: [refund.*]
        object: refund
        url: /v1/refunds/{data.refund_id}
        version: [updated_at]
    forward:
      - url: http://billing.internal/hooks
        secret: env:FWD
        include: object
`), env(map[string]string{"DEMO": "s", "FWD": fwdSecret}))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["demo"]
	a := p.APIRules()
	if a.Fetch[0].Object != "refund" || a.Fetch[1].Object != "payment" || a.Auth != "header" || a.AuthHeader != "X-Key" {
		t.Errorf("rules = %+v", a)
	}
	f := p.Forward[0]
	if string(f.SecretValue()) != fwdSecret || f.Types[0] != "*" || f.Timeout != 10*time.Second || f.BreakerFailures != 5 || f.BreakerProbe != 5*time.Second {
		t.Errorf("forward = %+v", f)
	}
}

// The rule extensions read from YAML: url_from, a GraphQL document with
// variables, answer_error and retry_errors, api_accept, bot auth.
func TestFetchRuleExtensionsFromYAML(t *testing.T) {
	cfg, err := Parse([]byte(valid+`    api_url: https://api.example.com
    api_auth: bot
    api_accept: application/vnd.api+json
    fetch:
      - types: [booking.*]
        object: booking
        url_from: data.payload.uri
        answer: resource
        version: [updated_at]
      - types: [Ticket.update]
        object: ticket
        url: /graphql
        graphql: "query($id: String!) { ticket(id: $id) { id updatedAt } }"
        variables: {id: "{data.data.id}"}
        key: "ticket/{data.data.id}"
        answer: data.ticket
        version: [updatedAt]
        answer_error: errors.0.extensions.code
        retry_errors: [RATELIMITED]
`), env(map[string]string{"DEMO": "s"}))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Providers["demo"].APIRules()
	b, g := a.Fetch[0], a.Fetch[1]
	if a.Auth != "bot" || a.Accept != "application/vnd.api+json" || b.URLFrom != "data.payload.uri" || b.URL != "" ||
		g.GraphQL == "" || g.Variables["id"] != "{data.data.id}" || g.AnswerError != "errors.0.extensions.code" || g.RetryErrors[0] != "RATELIMITED" {
		t.Errorf("rules = %+v", a)
	}
}

func TestFetchAndForwardErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"rule without version": {"    fetch: [{types: [a.*], object: a, url: '/a/{data.id}'}]\n", "providers.demo.fetch[0].version"},
		"rule with dot-dot":    {"    fetch: [{types: [a.*], object: a, url: '/a/../{data.id}', version: [v]}]\n", "providers.demo.fetch[0].url"},
		"bad auth":             {"    api_auth: cookie\n", "providers.demo.api_auth"},
		"forward without url":  {"    forward: [{secret: env:FWD}]\n", "providers.demo.forward[0].url"},
		"forward bad secret":   {"    forward: [{url: http://x/h, secret: short}]\n", "providers.demo.forward[0].secret"},
		"forward no secret":    {"    forward: [{url: http://x/h}]\n", "providers.demo.forward[0].secret"},
		"include unknown":      {"    forward: [{url: http://x/h, secret: env:FWD, include: all}]\n", "providers.demo.forward[0].include"},
		"url and url_from":     {"    fetch: [{types: [a.*], object: a, url: '/a/{data.id}', url_from: data.uri, version: [v]}]\n", "providers.demo.fetch[0].url, url_from"},
		"graphql without key": {"    fetch: [{types: [a.*], object: a, url: /graphql, graphql: 'query { a }', variables: {id: '{data.id}'}, version: [v]}]\n",
			"providers.demo.fetch[0].graphql"},
		"retry_errors alone": {"    fetch: [{types: [a.*], object: a, url: '/a/{data.id}', version: [v], retry_errors: [x]}]\n", "providers.demo.fetch[0].retry_errors"},
	} {
		_, err := Parse([]byte(valid+tc.yaml), env(map[string]string{"DEMO": "s", "FWD": fwdSecret}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), fwdSecret) {
			t.Errorf("%s: the error shows the secret", name)
		}
	}
}

// Entries of any providers naming one destination (scheme, host, port,
// path) must give it the same limits: it has one circuit.
func TestForwardDestinationLimitsAgree(t *testing.T) {
	two := func(second string) string {
		return "providers:\n  a:\n    scheme: github\n    secrets: [{id: s1, value: x}]\n    forward:\n" +
			"      - {url: 'http://Svc.internal:80/hooks?from=a', secret: env:FWD, concurrency: 8}\n" +
			"  b:\n    scheme: github\n    secrets: [{id: s1, value: x}]\n    forward:\n      - {url: '" + second + "', secret: env:FWD, concurrency: 8}\n"
	}
	getenv := env(map[string]string{"FWD": fwdSecret})
	if _, err := Parse([]byte(two("http://svc.internal/hooks")), getenv); err != nil {
		t.Errorf("same destination, same limits: %v", err)
	}
	_, err := Parse([]byte(strings.Replace(two("http://svc.internal/hooks"), "concurrency: 8}\n  b", "concurrency: 16}\n  b", 1)), getenv)
	if err == nil || !strings.Contains(err.Error(), "providers.b.forward[0]: destination http://svc.internal/…#435632a4 is also providers.a.forward[0]'s") {
		t.Errorf("same destination, other limits: %v", err)
	}
	if _, err := Parse([]byte(strings.Replace(two("http://svc.internal/other"), "concurrency: 8}\n  b", "concurrency: 16}\n  b", 1)), getenv); err != nil {
		t.Errorf("another path is another destination: %v", err)
	}
	for raw, want := range map[string]string{
		"http://Svc.Example/hooks":            "http://svc.example/…#435632a4",
		"https://user:pw@svc.example/hooks#x": "https://svc.example/…#435632a4",
		"https://svc.example:8443":            "https://svc.example:8443/",
	} {
		if got, err := redact.DestinationKey(raw); err != nil || got != want {
			t.Errorf("DestinationKey(%q) = %q, %v", raw, got, err)
		}
	}
}

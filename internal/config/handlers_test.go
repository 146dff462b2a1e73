package config

import (
	"strings"
	"testing"
	"time"
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

func TestFetchAndForwardErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"rule without version": {"    fetch: [{types: [a.*], object: a, url: '/a/{data.id}'}]\n", "providers.demo.fetch[0].version"},
		"rule with dot-dot":    {"    fetch: [{types: [a.*], object: a, url: '/a/../{data.id}', version: [v]}]\n", "providers.demo.fetch[0].url"},
		"bad auth":             {"    api_auth: cookie\n", "providers.demo.api_auth"},
		"forward without url":  {"    forward: [{secret: env:FWD}]\n", "providers.demo.forward[0].url"},
		"forward bad secret":   {"    forward: [{url: http://x/h, secret: short}]\n", "providers.demo.forward[0].secret"},
		"forward no secret":    {"    forward: [{url: http://x/h}]\n", "providers.demo.forward[0].secret"},
		"include unknown":      {"    forward: [{url: http://x/h, secret: env:FWD, include: all}]\n", "providers.demo.forward[0].include"},
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

package config

import (
	"strings"
	"testing"
	"time"
)

func TestAPISection(t *testing.T) {
	cfg, err := Parse([]byte(`
api:
  audience: https://gatehouse.test/api
  issuers:
    - issuer: https://idp.test/
      introspection: {client_id: rs, client_secret: "env:RS_SECRET"}
      scope_aliases: {custom: [sessions:read]}
  operators: [{issuer: https://idp.test/, subject: carol}]
`), env(map[string]string{"RS_SECRET": "s3"}))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.API
	if !a.BearerEnabled() || a.Skew != 60*time.Second || a.TokenType != "at+jwt" || a.OperatorRole != "gatehouse:operator" ||
		a.JWKSMaxAge != time.Hour || a.JWKSMinRefetch != 30*time.Second {
		t.Fatalf("defaults: %+v", a)
	}
	if string(a.Issuers[0].Introspection.Secret()) != "s3" {
		t.Fatalf("introspection secret not resolved")
	}
	cfg, err = Parse([]byte("api: {}\n"), env(map[string]string{"GATEHOUSE_API_AUDIENCE": "aud-from-env"}))
	if err != nil || cfg.API.Audience != "aud-from-env" || cfg.API.BearerEnabled() {
		t.Fatalf("env override: %v %+v", err, cfg.API)
	}
}

func TestAPISectionErrors(t *testing.T) {
	for yaml, want := range map[string]string{
		"api: {issuers: [{issuer: https://idp.test/}]}":                                                            "api.audience",
		"api: {audience: a, issuers: [{issuer: https://idp.test/, algorithms: [HS256]}]}":                          "api.issuers[0].algorithms",
		"api: {audience: a, issuers: [{issuer: https://idp.test/, algorithms: [none]}]}":                           "api.issuers[0].algorithms",
		"api: {audience: a, issuers: [{issuer: idp}]}":                                                             "api.issuers[0].issuer",
		"api: {audience: a, issuers: [{issuer: https://i/}, {issuer: https://i/}]}":                                "duplicate",
		"api: {audience: a, token_type: jwt}":                                                                      "api.token_type",
		"api: {audience: a, skew: 1h}":                                                                             "api.skew",
		"api: {audience: a, issuers: [{issuer: https://i/, introspection: {client_id: rs}}]}":                      "client_secret",
		"api: {audience: a, issuers: [{issuer: https://i/, introspection: {url: https://i/x, client_secret: s}}]}": "client_id",
		"api: {operators: [{issuer: https://i/}]}":                                                                 "api.operators[0]",
	} {
		_, err := Parse([]byte(yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to name %q", yaml, err, want)
		}
	}
}

package config

import (
	"strings"
	"testing"
)

// Finding 6 of issue 25: a topic Kafka would refuse, two providers on one
// topic, a provider on another's retry or dead-letter topic, and an hmac
// definition that does not sign the body are refused when the
// configuration loads, naming the key (on main all of them loaded).
func TestTopicsAndSignedContentAreValidated(t *testing.T) {
	cfg := func(demoTopic, otherTopic string) string {
		y := `
database_url: postgres://localhost/x
providers:
  demo:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: a, value: "x"}]
`
		if demoTopic != "" {
			y += "    topic: " + demoTopic + "\n"
		}
		y += `  other:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: a, value: "x"}]
`
		if otherTopic != "" {
			y += "    topic: " + otherTopic + "\n"
		}
		return y
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"space", cfg(`"payments in"`, ""), "providers.demo.topic"},
		{"slash", cfg("payments/in", ""), "providers.demo.topic"},
		{"hash", cfg(`"payments#1"`, ""), "providers.demo.topic"},
		{"dot", cfg(`"."`, ""), "providers.demo.topic"},
		{"too long", cfg(strings.Repeat("t", 250), ""), "providers.demo.topic"},
		{"retry topic too long", cfg(strings.Repeat("t", 245), ""), "retry and dead-letter"},
		{"same topic", cfg("shared", "shared"), "collides"},
		{"dot against underscore", cfg("pay.in", "pay_in"), "collides"},
		{"another's retry topic", cfg("", "gatehouse.webhooks.demo.retry.1"), "collides"},
		{"another's retry topic past the ladder", cfg("", "gatehouse.webhooks.demo.retry.9"), "retry topic of providers.demo"},
		{"another's dead-letter topic", cfg("", "gatehouse.webhooks.demo.dlq"), "collides"},
		{"hmac without body", scheme("hmac", "    hmac: {header: X-Sig, content: \"{timestamp}\", timestamp: {header: X-Ts}}\n    event_id: [{header: X-Id}]\n    event_type: [{value: t}]"), "hmac.content"},
		{"hmac static", scheme("hmac", "    hmac: {header: X-Sig, content: \"static\"}\n    event_id: [{header: X-Id}]\n    event_type: [{value: t}]"), "hmac.content"},
	} {
		_, err := Parse([]byte(c.yaml), env(map[string]string{"DEMO": "x"}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	for _, ok := range []string{cfg("", ""), cfg("payments.in-v2_eu", "other.topic"), cfg("gatehouse.webhooks.demo.retry", "")} {
		if _, err := Parse([]byte(ok), env(nil)); err != nil {
			t.Errorf("valid topics refused: %v", err)
		}
	}
}

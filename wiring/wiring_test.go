package wiring

import (
	"reflect"
	"testing"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
)

// full is a configuration that sets, or defaults, every setting the
// stages read, so each built Config must carry a value in every field: a
// field wiring forgets to copy is a zero the stage would run with.
const full = `
database_url: postgres://x/y
relay: {mode: poll}
kafka: {brokers: ["127.0.0.1:9092"], sasl: {mechanism: SCRAM-SHA-256, username: u, password: p}, tls: {enabled: true}}
storage: {object_retention: 720h}
auth:
  issuer: https://op.example/
  client_id: web
  client_secret: s3cret
  redirect_url: https://app.example/callback
  post_logout_redirect_url: https://app.example/
  offline_access: true
  token_endpoint_auth_method: client_secret_basic
  refresh: false
  userinfo: false
  operator_token: op-token
  next_allowlist: ["https://app.example"]
  encryption_keys: [{id: k1, value: "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE="}]
api:
  operators: [{issuer: https://op.example/, subject: alice}]
providers:
  shop:
    scheme: meta
    verify_token: vt
    secrets: [{id: s1, value: x}]
    replay_guard_ttl: 1h
    search: indexed
    owner_path: data.owner
    owner_issuer: https://op.example/
`

func parse(t *testing.T) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(full), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// zeroFields names the fields of struct v left zero, but those in skip.
func zeroFields(v any, skip ...string) []string {
	var out []string
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if rv.Field(i).IsZero() && !contains(skip, name) {
			out = append(out, name)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestEverySettingReachesItsStage(t *testing.T) {
	c := parse(t)
	// The caller's dependencies are not settings.
	if z := zeroFields(Receiver(c), "Writer", "Logger", "Registerer", "Now", "MaxHeldRefusals", "Tracer", "Rollup"); len(z) > 0 {
		t.Errorf("wiring.Receiver leaves %v zero", z)
	}
	if z := zeroFields(*Providers(c)["shop"]); len(z) > 0 {
		t.Errorf("wiring.Provider leaves %v zero", z)
	}
	if z := zeroFields(IngestMaintenance(c), "Pool", "Logger", "Registerer", "Now", "OutboxExternal"); len(z) > 0 {
		t.Errorf("wiring.IngestMaintenance leaves %v zero", z)
	}
	if !IngestMaintenance(c).Providers["shop"].SearchIndexed {
		t.Error("the indexed provider's search did not reach the maintenance")
	}
	if ks := kafka.SecurityOf(&c.Kafka); ks.Mechanism != "SCRAM-SHA-256" || ks.TLS == nil || string(ks.Password) != "p" {
		t.Errorf("kafka security %+v", ks)
	}
	if z := zeroFields(APIProviders(c)["shop"]); len(z) > 0 {
		t.Errorf("wiring.APIProviders leaves %v zero", z)
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/schemas/providers"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const valid = `
database_url: postgres://localhost/x
providers:
  demo:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{id: a, value: "env:DEMO"}]
`

func TestParseValidWithDefaultsAndSecretRefs(t *testing.T) {
	cfg, err := Parse([]byte(valid), env(map[string]string{"DEMO": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["demo"]
	if string(p.Secrets[0].Resolved()) != "s3cret" {
		t.Fatalf("secret = %q", p.Secrets[0].Resolved())
	}
	if p.Tolerance != 300*time.Second || p.MaxBodyBytes != 1<<20 || p.Topic != "gatehouse.webhooks.demo" {
		t.Fatalf("defaults: %v %v %v", p.Tolerance, p.MaxBodyBytes, p.Topic)
	}
	if cfg.Listen != ":8080" || cfg.AdminListen != "127.0.0.1:9090" {
		t.Fatalf("listen defaults: %q %q", cfg.Listen, cfg.AdminListen)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	cfg, err := Parse([]byte(valid), env(map[string]string{
		"DEMO": "x", "GATEHOUSE_DATABASE_URL": "postgres://other/db", "GATEHOUSE_LISTEN": ":1",
		"GATEHOUSE_KAFKA_BROKERS": "a:9092, b:9092",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgres://other/db" || cfg.Listen != ":1" || len(cfg.Kafka.Brokers) != 2 || cfg.Kafka.Brokers[1] != "b:9092" {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
}

func TestFileSecretReference(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte(strings.Replace(valid, "env:DEMO", "file:"+path, 1)), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cfg.Providers["demo"].Secrets[0].Resolved()); got != "from-file" {
		t.Fatalf("secret = %q", got)
	}
}

// Every invalid configuration is refused with an error naming the bad key.
func TestInvalidConfigNamesTheKey(t *testing.T) {
	cases := map[string]struct{ yaml, key string }{
		"unknown top-level key":     {valid + "\nlisten_adress: x\n", "listen_adress"},
		"unknown provider key":      {strings.Replace(valid, "scheme: reference", "scheme: reference\n    secret: x", 1), "secret"},
		"bad scheme":                {strings.Replace(valid, "scheme: reference", "scheme: paypal", 1), "providers.demo.scheme"},
		"no secrets":                {strings.Replace(valid, `secrets: [{id: a, value: "env:DEMO"}]`, "secrets: []", 1), "providers.demo.secrets"},
		"unset env secret":          {strings.Replace(valid, "env:DEMO", "env:NOPE", 1), "providers.demo.secrets[0].value"},
		"missing file secret":       {strings.Replace(valid, "env:DEMO", "file:/nonexistent/x", 1), "providers.demo.secrets[0].value"},
		"reference headers":         {strings.Replace(valid, "timestamp_header: X-Ts", "", 1), "providers.demo.timestamp_header"},
		"bad log level":             {valid + "log_level: loud\n", "log_level"},
		"bad duration":              {strings.Replace(valid, "scheme: reference", "scheme: reference\n    tolerance: soon", 1), "tolerance"},
		"bad provider name":         {strings.Replace(valid, "  demo:", "  Demo/x:", 1), "providers.Demo/x"},
		"bad api url":               {strings.Replace(valid, "scheme: reference", "scheme: reference\n    api_url: not a url", 1), "providers.demo.api_url"},
		"bad relay mode":            {valid + "relay: {mode: carrier-pigeon}\n", "relay.mode"},
		"session timeout too short": {valid + "consumers: {session_timeout: 1s}\n", "consumers.session_timeout"},
		"hmac without definition":   {scheme("hmac", ""), "providers.demo.hmac"},
		"hmac bad algorithm":        {scheme("hmac", "    hmac: {header: X-Sig, algorithm: md5}\n    event_id: [{path: id}]\n    event_type: [{path: type}]"), "providers.demo.hmac.algorithm"},
		"hmac unknown content part": {scheme("hmac", "    hmac: {header: X-Sig, content: \"{nonce}.{body}\"}\n    event_id: [{path: id}]\n    event_type: [{path: type}]"), "providers.demo.hmac.content"},
		"hmac url without public":   {scheme("hmac", "    hmac: {header: X-Sig, content: \"{url}{body}\"}\n    event_id: [{path: id}]\n    event_type: [{path: type}]"), "providers.demo.hmac.content"},
		"hmac without event_id":     {scheme("hmac", "    hmac: {header: X-Sig}"), "providers.demo.event_id"},
		"hmac misspelled key":       {scheme("hmac", "    hmac: {header: X-Sig, algoritm: sha1}"), "algoritm"},
		"field with two sources":    {scheme("hmac", "    hmac: {header: X-Sig}\n    event_id: [{path: id, header: X-Id}]\n    event_type: [{path: type}]"), "providers.demo.event_id[0]"},
		"hmac block on a preset":    {scheme("paddle", "    hmac: {header: X-Sig}"), "providers.demo.hmac"},
		"fields on a coded kind":    {scheme("stripe", "    event_id: [{path: id}]"), "providers.demo.event_id"},
		"twilio without public_url": {scheme("twilio", ""), "providers.demo.public_url"},
		"square without public_url": {scheme("square", ""), "providers.demo.public_url"},
		"public_url with query":     {scheme("twilio", "    public_url: https://h.example.com/webhooks/demo?x=1"), "providers.demo.public_url"},
		"public_url relative":       {scheme("hubspot", "    public_url: /webhooks/demo"), "providers.demo.public_url"},
		"meta without verify_token": {scheme("meta", ""), "providers.demo.verify_token"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), env(map[string]string{"DEMO": "x"}))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.key) {
				t.Fatalf("error %q does not name %q", err, c.key)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatal("error leaks a secret")
			}
		})
	}
}

func TestRequireDatabase(t *testing.T) {
	cfg, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.RequireDatabase(); err == nil || !strings.Contains(err.Error(), "database_url") {
		t.Fatalf("err = %v", err)
	}
}

// TestDatabaseURLReference reads database_url from a file or the
// environment; an unreadable reference fails only where a database is
// required, naming the key.
func TestDatabaseURLReference(t *testing.T) {
	path := filepath.Join(t.TempDir(), "database-url")
	if err := os.WriteFile(path, []byte("postgres://u@h/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse([]byte("database_url: \"file:"+path+"\"\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgres://u@h/db" || cfg.RequireDatabase() != nil {
		t.Fatalf("database_url = %q, %v", cfg.DatabaseURL, cfg.RequireDatabase())
	}
	cfg, err = Parse([]byte("database_url: \"env:DBURL\"\n"), env(map[string]string{"DBURL": "postgres://e@h/db"}))
	if err != nil || cfg.DatabaseURL != "postgres://e@h/db" {
		t.Fatalf("env reference: %q, %v", cfg.DatabaseURL, err)
	}
	cfg, err = Parse([]byte("database_url: \"file:/nonexistent/database-url\"\n"), env(nil))
	if err != nil {
		t.Fatalf("a missing reference must not fail parsing: %v", err)
	}
	if err := cfg.RequireDatabase(); err == nil || !strings.Contains(err.Error(), "database_url") || !strings.Contains(err.Error(), "/nonexistent/database-url") {
		t.Fatalf("RequireDatabase = %v, want the key and the file named", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml"), false, env(nil)); err == nil {
		t.Fatal("missing explicit file accepted")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml"), true, env(nil)); err != nil {
		t.Fatal(err)
	}
}

// scheme turns the valid reference provider into one of scheme with extra
// YAML lines.
func scheme(name, extra string) string {
	out := strings.Replace(valid, "scheme: reference", "scheme: "+name, 1)
	out = strings.Replace(out, "    timestamp_header: X-Ts\n", "", 1)
	out = strings.Replace(out, "    signature_header: X-Sig\n", "", 1)
	if extra != "" {
		out = strings.Replace(out, "scheme: "+name, "scheme: "+name+"\n"+extra, 1)
	}
	return out
}

// Every catalogue entry and the declarative scheme load from YAML.
func TestEveryKindLoads(t *testing.T) {
	for _, name := range providers.Names() {
		extra := ""
		switch name {
		case "hmac":
			extra = "    hmac: {header: X-Sig, prefix: \"sha256=\", content: \"{timestamp}.{body}\", timestamp: {header: X-Ts}}\n    event_id: [{header: X-Id}]\n    event_type: [{join: [{path: type}, {path: action}]}, {value: unknown}]"
		case "twilio", "square", "hubspot":
			extra = "    public_url: https://hooks.example.com/webhooks/demo"
		case "meta":
			extra = "    verify_token: env:DEMO"
		case "reference":
			continue
		}
		secret := "x"
		switch name {
		case "discord":
			secret = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
		case "sendgrid":
			secret = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMJbj297jR1GWmIMuru48z+2NP4awB+mYZfOpPXyPJHJgZMaTvjuNC4YopjF6EoMYibwXwCZwQwjCuQWKoHf4pA=="
		case "postmark":
			secret = "user:pass"
		case "standard-webhooks", "clerk", "resend":
			secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		}
		if _, err := Parse([]byte(scheme(name, extra)), env(map[string]string{"DEMO": secret})); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Issue 36: an unclosed quote was reported at the line where its mapping
// began (line 4 for a quote opened on line 6); the error now names the
// quote's own line and key, and never the value (it may be a secret).
func TestUnclosedQuoteIsReportedOnItsLine(t *testing.T) {
	raw := "providers:\n  demo:\n    scheme: reference\n    timestamp_header: X-T\n    signature_header: X-S\n" +
		"    secrets: [{id: s, value: abc}]\n    topic: \"whsec_looks_secret\n    api_url: http://x\n"
	_, err := Parse([]byte(raw), func(string) string { return "" })
	if err == nil {
		t.Fatal("parsed")
	}
	if !strings.Contains(err.Error(), "line 7: a quote is not closed in the value of topic") || strings.Contains(err.Error(), "whsec_looks_secret") {
		t.Errorf("error %q: want line 7 and the key topic, without the value", err)
	}
}

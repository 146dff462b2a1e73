package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/config"
)

func runCLI(t *testing.T, getenv func(string) string, args ...string) (string, string, error) {
	t.Helper()
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, getenv, &out, &errOut)
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigCheckRedactsSecrets: `config check` prints the effective
// configuration, and no secret value of any kind appears in it (searched
// for each value), whether written literally, read from a file or set
// through an environment override; references stay visible.
func TestConfigCheckRedactsSecrets(t *testing.T) {
	secretFile := writeFile(t, "stripe-secret", "whsec_from_a_file_8d1f\n")
	secrets := map[string]string{
		"provider secret":       "whsec_literal_provider_secret_71c2",
		"api key":               "sk_live_api_key_5e0a",
		"verify token":          "meta_verify_token_99b1",
		"forward secret":        "whsec_c2VjcmV0LWZvcndhcmQtc2VjcmV0LWZvcndhcmQ=",
		"sasl password":         "kafka-sasl-password-4411",
		"client secret":         "oidc-client-secret-from-env-1c1c",
		"operator token":        "operator-token-literal-0f0f",
		"encryption key":        "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=",
		"introspection secret":  "introspection-secret-7a7a",
		"database password":     "pg-password-3b3b",
		"provider secret (env)": "whsec_env_provider_secret_2d2d",
	}
	file := `listen: "127.0.0.1:0"
database_url: "postgres://gatehouse:` + secrets["database password"] + `@db.example.com:5432/gatehouse?sslmode=require"
providers:
  stripe:
    scheme: stripe
    secrets:
      - {id: a, value: "` + secrets["provider secret"] + `"}
      - {id: b, value: "file:` + secretFile + `"}
      - {id: c, value: "env:STRIPE_SECRET"}
    api_url: https://api.stripe.com
    api_key: "` + secrets["api key"] + `"
    forward: [{url: "https://team.example.com/hook", secret: "` + secrets["forward secret"] + `"}]
  fb:
    scheme: meta
    secrets: [{value: app-secret-literal-6e6e}]
    verify_token: "` + secrets["verify token"] + `"
kafka:
  brokers: [k1:9092]
  sasl: {mechanism: SCRAM-SHA-256, username: gh, password: "` + secrets["sasl password"] + `"}
auth:
  issuer: https://login.example.com/
  client_id: gatehouse
  redirect_url: https://gatehouse.example.com/callback
  operator_token: "` + secrets["operator token"] + `"
  encryption_keys: [{id: k1, value: "` + secrets["encryption key"] + `"}]
api:
  audience: https://gatehouse.example.com/api
  issuers:
    - issuer: https://login.example.com/
      introspection: {client_id: gh, client_secret: "` + secrets["introspection secret"] + `"}
`
	secrets["app secret"] = "app-secret-literal-6e6e"
	secrets["file secret"] = "whsec_from_a_file_8d1f"
	path := writeFile(t, "gatehouse.yaml", file)
	getenv := func(name string) string {
		switch name {
		case "STRIPE_SECRET":
			return secrets["provider secret (env)"]
		case "GATEHOUSE_AUTH_CLIENT_SECRET":
			return secrets["client secret"]
		}
		return ""
	}
	out, errOut, err := runCLI(t, getenv, "config", "check", "--config", path)
	if err != nil {
		t.Fatalf("config check: %v\n%s", err, errOut)
	}
	for what, v := range secrets {
		if strings.Contains(out+errOut, v) {
			t.Errorf("the %s appears in the output", what)
		}
	}
	for _, want := range []string{"env:STRIPE_SECRET", "file:" + secretFile, config.Redact, "postgres://gatehouse:" + config.Redact + "@db.example.com",
		"retention: 720h", "max_in_flight: 256", "client_secret: " + config.Redact} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, config.Redact) < 9 {
		t.Errorf("only %d redactions:\n%s", strings.Count(out, config.Redact), out)
	}
	if got := config.RedactDatabaseURL("host=db user=gh password=" + secrets["database password"] + " dbname=x"); strings.Contains(got, secrets["database password"]) {
		t.Errorf("key=value connection string: %s", got)
	}
}

// TestConfigCheckNamesPathAndLine: a bad file's error names the key's
// YAML path and its line, for a type error, an unknown key, an invalid
// value and a missing required key.
func TestConfigCheckNamesPathAndLine(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"type": {"log_level: info\nproviders:\n  demo:\n    scheme: stripe\n    secrets: [{value: x}]\n    tolerance: soon\n",
			"providers.demo.tolerance (line 6)"},
		"unknown key": {"log_level: info\nstorage:\n  retention: 720h\n  retension: 1h\n", "storage.retension (line 4)"},
		"invalid value": {"listen: \":8080\"\nproviders:\n  demo:\n    scheme: nope\n    secrets: [{value: x}]\n",
			"providers.demo.scheme (line 4)"},
		"missing key": {"providers:\n  demo:\n    scheme: reference\n    secrets: [{value: x}]\n",
			"providers.demo.timestamp_header (line 2)"},
		"list element": {"providers:\n  demo:\n    scheme: stripe\n    secrets:\n      - {id: a, value: x}\n      - {id: a, value: y}\n",
			"providers.demo.secrets[1].id (line 6)"},
		"section": {"storage:\n  retention: 1m\n", "storage.retention (line 2)"},
	} {
		path := writeFile(t, "bad.yaml", tc.file)
		out, _, err := runCLI(t, nil, "config", "check", "--config", path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to name %q", name, err, tc.want)
		}
		if out != "" {
			t.Errorf("%s: printed %q", name, out)
		}
	}
}

// TestConfigDefaultsParses: `config defaults` prints a file that parses
// to the configuration of an empty file, and that check accepts.
func TestConfigDefaultsParses(t *testing.T) {
	out, _, err := runCLI(t, nil, "config", "defaults")
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Parse([]byte(out), func(string) string { return "" })
	if err != nil {
		t.Fatalf("the defaults do not parse: %v", err)
	}
	want, _ := config.Parse(nil, func(string) string { return "" })
	if !reflect.DeepEqual(got, want) {
		t.Error("the defaults parse to another configuration than an empty file")
	}
	if n := strings.Count(out, "\n"); n < 400 {
		t.Errorf("the defaults are %d lines", n)
	}
	path := writeFile(t, "defaults.yaml", out)
	if _, _, err := runCLI(t, nil, "config", "check", "--config", path); err != nil {
		t.Errorf("check of the defaults: %v", err)
	}
	if _, _, err := runCLI(t, nil, "config", "nope"); err == nil {
		t.Error("an unknown verb succeeded")
	}
}

// TestDoctorCommand: `gatehouse doctor` prints one line per check, ✓ or
// ✗ with the fix, and fails when any check failed (here: no database
// answers, the admin listener is on a public address).
func TestDoctorCommand(t *testing.T) {
	path := writeFile(t, "gatehouse.yaml", "admin_listen: \"203.0.113.7:9090\"\ndatabase_url: \"postgres://u:pw-9c9c@127.0.0.1:1/x?connect_timeout=2\"\n")
	out, _, err := runCLI(t, nil, "doctor", "--config", path, "--timeout", "3s")
	if err == nil || !strings.Contains(err.Error(), "checks failed") {
		t.Errorf("err = %v", err)
	}
	for _, want := range []string{"✓ configuration loads", "✗ admin listener not public", "✗ database reachable", "    fix: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pw-9c9c") {
		t.Errorf("the database password is printed:\n%s", out)
	}
	if _, _, err := runCLI(t, nil, "doctor", "--config", filepath.Join(t.TempDir(), "none.yaml")); err == nil {
		t.Error("a missing file passed")
	}
}

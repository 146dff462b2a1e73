package doctor

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Issue 46: doctor printed "✓ kafka brokers reachable" for a check it did
// not run, left the OpenID Provider out without a word, and counted one
// missing secret twice. A check not run is ○ skipped with its reason and
// counted apart; an OP given only through the environment is checked;
// each missing secret is one ✗.
func TestDoctorShowsSkippedChecksAndCountsEachFailureOnce(t *testing.T) {
	raw := []byte(`admin_listen: "127.0.0.1:9090"
providers:
  demo:
    scheme: reference
    timestamp_header: X-Timestamp
    signature_header: X-Signature
    secrets: [{value: "env:DEMO_SECRET_UNSET"}]
`)
	runDoctor := func(getenv func(string) string) ([]Check, string, Tally) {
		checks := Run(context.Background(), Options{Raw: raw, Path: "g.yaml", Getenv: getenv, Timeout: 2 * time.Second})
		var b bytes.Buffer
		tally := Write(&b, checks)
		return checks, b.String(), tally
	}
	checks, out, tally := runDoctor(func(string) string { return "" })
	for _, want := range []string{
		"○ kafka brokers reachable: skipped: kafka.brokers (GATEHOUSE_KAFKA_BROKERS) is empty",
		"○ OpenID Provider discovery and JWKS reachable: skipped: no OpenID Provider",
		"GATEHOUSE_AUTH_ISSUER",
		"✗ secret providers.demo.secrets[0].value (line 7) resolvable",
		"○ database checks (clock, wal_level, migrations, replication slot, partitions): skipped: the database is not reachable",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "✓ kafka brokers reachable") || strings.Contains(out, "secrets resolvable") {
		t.Errorf("a check not run shown passed, or the missing secret counted in a summary too:\n%s", out)
	}
	// Failed: the secret and the database (database_url unset); the
	// skipped ones are neither passed nor failed.
	if tally.Failed != 2 || tally.Skipped < 3 || tally != Count(checks) {
		t.Errorf("tally %+v:\n%s", tally, out)
	}
	if !strings.Contains(out, "2 failed") || !strings.Contains(out, "skipped\n") {
		t.Errorf("no tally line:\n%s", out)
	}
	for _, c := range checks {
		if c.Skipped && c.OK {
			t.Errorf("%q is both skipped and passed", c.Name)
		}
	}

	// The OP only in the environment (as make run gives it to its own
	// process) is checked, not skipped.
	env := map[string]string{
		"GATEHOUSE_AUTH_ISSUER":         "http://127.0.0.1:1/",
		"GATEHOUSE_AUTH_CLIENT_ID":      "web",
		"GATEHOUSE_AUTH_REDIRECT_URL":   "http://localhost:8080/callback",
		"GATEHOUSE_AUTH_ENCRYPTION_KEY": "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=",
		"DEMO_SECRET_UNSET":             "whsec_x",
	}
	_, out, _ = runDoctor(func(k string) string { return env[k] })
	if !strings.Contains(out, "✗ OpenID Provider http://127.0.0.1:1/ (auth.issuer) discovery and JWKS reachable") {
		t.Errorf("the OP given by the environment is not checked:\n%s", out)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/auth/bearer/bearertest"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// schemathesisVersion is the version deploy/local/deps.sh installs.
const schemathesisVersion = "4.32.5"

// schemathesisMaxExamples bounds every phase per operation so the three API
// runs and the receiver run (one operation, four times as many) stay well
// under a minute together.
const schemathesisMaxExamples = 25

// stBinary finds Schemathesis in the project-local virtual environment
// deploy/local/deps.sh (make deps) creates; without it the test fails.
func stBinary(t *testing.T) string {
	t.Helper()
	st, err := filepath.Abs("../../bin/schemathesis/bin/st")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(st, "--version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(schemathesisVersion)) {
		t.Fatalf("Schemathesis %s not found at %s (%v, %q): run deploy/local/deps.sh (make deps)", schemathesisVersion, st, err, out)
	}
	return st
}

// TestSchemathesis fuzzes the real binary against its published contracts
// with Schemathesis: api/openapi.yaml (fetched from the server) with an
// operator token, a non-operator token and no token, and
// api/webhooks.openapi.yaml unsigned. Every phase runs (examples, coverage,
// fuzzing, stateful through the spec's links) with every check; the data
// holds events in every processing state (ids with "/" and "?" among
// them), objects owned by both token subjects and their sessions, drawn
// into the requests through Schemathesis dictionaries, and the HAR report
// must show that revocation, object reads, escaped event ids, replay's
// 409 and force=true were all reached. A failure
// prints Schemathesis's report with its curl reproduction commands.
func TestSchemathesis(t *testing.T) {
	st := stBinary(t)
	is := bearertest.NewIssuer(t)
	op := testenv.StartOP(t, []string{"http://localhost:1/callback"})
	dbURL := testenv.Postgres(t)
	data := seedContract(t, dbURL, is.URL)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`providers:
  acme:
    scheme: reference
    timestamp_header: X-Ts
    signature_header: X-Sig
    secrets: [{value: s1}]
    max_body_bytes: 128
    owner_path: owner
    owner_issuer: %[1]q
api:
  audience: https://gatehouse.test/api
  issuers: [{issuer: %[1]q}]
  operators: [{issuer: %[1]q, subject: carol}]
auth:
  issuer: %[2]q
  client_id: %[3]q
  client_secret: %[4]q
  redirect_url: http://localhost:1/callback
  encryption_keys: [{id: k1, value: %[5]q}]
`, is.URL, op.Issuer, op.ClientID, op.ClientSecret, base64.StdEncoding.EncodeToString(key)))
	p := startServe(t, dbURL, cfgPath)
	seed := os.Getenv("GATEHOUSE_SCHEMATHESIS_SEED")
	if seed == "" {
		n, _ := rand.Int(rand.Reader, big.NewInt(1<<31))
		seed = strconv.FormatInt(n.Int64(), 10)
	}
	t.Logf("Schemathesis seed %s (set GATEHOUSE_SCHEMATHESIS_SEED to repeat)", seed)
	all := "sessions:read sessions:write events:read events:replay objects:read"
	token := func(sub string) string {
		c := is.Claims(time.Now(), sub, "https://gatehouse.test/api", all)
		c["exp"] = time.Now().Add(10 * time.Minute).Unix() // outlives the runs
		return is.Mint(c, bearertest.Options{})
	}
	runs := []struct {
		name string
		args []string
	}{
		{"operator", []string{"-H", "Authorization: Bearer " + token("carol")}},
		{"non-operator", []string{"-H", "Authorization: Bearer " + token("alice")}},
		// No credentials at all: Schemathesis generates none either.
		{"no-token", []string{"--generation-with-security-parameters", "false"}},
	}
	var calls []exchange
	round := func(seed, suffix string) {
		for _, r := range runs {
			t.Run("api/"+r.name+suffix, func(t *testing.T) {
				calls = append(calls, runSchemathesis(t, st, seed, schemathesisMaxExamples, apiConfig+data.toml(), append([]string{p.public + "/api/v1/openapi.yaml"}, r.args...)...)...)
			})
		}
	}
	round(seed, "")
	// The runs reached the seeded data, not only 401/404s (judged only when
	// they passed: a failed run reports no requests). Which operations a
	// seed's runs reach with which data is the generator's draw: when one
	// is not reached, the runs go once more with the next seed, and the two
	// rounds' requests together must reach every one.
	wants := []struct {
		what, method, path string
		status             int
	}{
		{"a replay", "POST", "/replay", 202},
		{"a forced replay", "POST", "/replay?force=true", 202},
		{"a replay refused without force", "POST", "/replay", 409},
		{"an event read", "GET", "/api/v1/events/acme/", 200},
		{"an event read by an escaped id", "GET", "/api/v1/events/acme/evt%2F", 200},
		{"an object read by its owner", "GET", "/api/v1/objects/acme/", 200},
		{"a session revoked", "DELETE", "/api/v1/sessions/", 204},
		{"a method not allowed", "", "", 405},
	}
	for _, want := range wants {
		if !t.Failed() && !reached(calls, want.method, want.path, want.status) {
			n, _ := strconv.ParseInt(seed, 10, 64)
			again := strconv.FormatInt(n+1, 10)
			t.Logf("%s not reached with seed %s: the runs go once more with seed %s", want.what, seed, again)
			round(again, "/again")
			break
		}
	}
	for _, want := range wants {
		if !t.Failed() && !reached(calls, want.method, want.path, want.status) {
			t.Errorf("no run reached %s (%s …%s… → %d)", want.what, want.method, want.path, want.status)
		}
	}
	t.Run("webhooks/unsigned", func(t *testing.T) {
		spec, err := filepath.Abs("../../api/webhooks.openapi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		calls := runSchemathesis(t, st, seed, 4*schemathesisMaxExamples, webhookConfig, spec, "--url", p.public)
		for _, c := range calls {
			if c.Status != 400 && c.Status != 404 && c.Status != 405 && c.Status != 413 {
				t.Errorf("unsigned %s %s answered %d", c.Method, c.URL, c.Status)
			}
		}
		for _, status := range []int{400, 404, 413} {
			if !reached(calls, "", "", status) {
				t.Errorf("no unsigned delivery was answered %d", status)
			}
		}
	})
}

// exchange is one request Schemathesis sent and the status it got (from
// its HAR report).
type exchange struct {
	Method, URL string
	Status      int
}

func reached(calls []exchange, method, pathPart string, status int) bool {
	for _, c := range calls {
		if (method == "" || c.Method == method) && strings.Contains(c.URL, pathPart) && c.Status == status {
			return true
		}
	}
	return false
}

// apiConfig: a schema-valid cursor the server did not issue, and an until
// not later than since, are refused by design (400, documented; no JSON
// Schema can state the order of two members), so
// positive_data_acceptance also expects 400 on the paged operations.
const apiConfig = `
[[operations]]
include-operation-id = ["listEvents", "listObjects", "listIssues", "searchEvents"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "503"]
`

// webhookConfig: an unsigned delivery can never be accepted; every answer
// must be 400 (signature), 404 (unknown provider), 405 or 413, never 5xx.
// The provider is drawn from the configured one (its max_body_bytes is
// 128 so 413 is reachable) and an unknown one most of the time, any other
// name otherwise.
const webhookConfig = `
[dictionaries.providers]
values = ["acme", "unknown-provider"]

[parameters]
"path.provider" = { dictionary = "providers", probability = 0.9 }

[checks.positive_data_acceptance]
expected-statuses = ["400", "404", "405", "413"]

[checks.negative_data_rejection]
expected-statuses = ["400", "404", "405", "413"]

[checks.not_a_server_error]
expected-statuses = ["400", "404", "405", "413"]
`

// runSchemathesis runs `st run` with every phase and check, fails the test
// with Schemathesis's report when it finds anything, and returns what it
// sent.
func runSchemathesis(t *testing.T, st, seed string, maxExamples int, config string, args ...string) []exchange {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "schemathesis.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"--config-file", cfg, "run"}, args[0])
	argv = append(argv, args[1:]...)
	argv = append(argv,
		"--checks", "all",
		"--phases", "examples,coverage,fuzzing,stateful",
		"--max-examples", strconv.Itoa(maxExamples),
		"--seed", seed,
		"--workers", "2",
		"--request-timeout", "10",
		"--generation-database", "none",
		"--no-color", "--output-sanitize", "true",
		"--report", "har", "--report-har-path", filepath.Join(dir, "run.har"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out []byte
	var err error
	seedAt := slices.Index(argv, "--seed") + 1
	for attempt := 1; ; attempt++ {
		cmd := exec.CommandContext(ctx, st, argv...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SCHEMATHESIS_HOOKS=", "NO_COLOR=1")
		start := time.Now()
		out, err = cmd.CombinedOutput()
		t.Logf("schemathesis %s: %s", t.Name(), time.Since(start).Round(time.Millisecond))
		// CPython's AST constructor can lose count of its recursion depth
		// (python/cpython#106905), which Hypothesis's lambda-source
		// extraction hits now and then: a "Runtime Error" of the tool, not
		// of gatehouse. Whether it does depends on the call depth the seed's
		// draws reach it at, so a seed that hits it tends to hit it again
		// (four times in a row once): only that signature, with no failure
		// of a check, is run again, with the next seed, at most three times
		// more.
		if err == nil || attempt >= 4 || !bytes.Contains(out, []byte("AST constructor recursion depth mismatch")) || bytes.Contains(out, []byte("= FAILURES =")) {
			break
		}
		n, _ := strconv.ParseInt(argv[seedAt], 10, 64)
		argv[seedAt] = strconv.FormatInt(n+1, 10)
		t.Logf("schemathesis hit CPython's AST recursion-depth bug (an internal error, no check failed); running it again with seed %s:\n%s", argv[seedAt], out)
	}
	if err != nil {
		t.Fatalf("Schemathesis found contract violations (%v); its report, with curl reproduction commands:\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.har"))
	if err != nil {
		t.Fatalf("schemathesis report: %v", err)
	}
	var har struct {
		Log struct {
			Entries []struct {
				Request  struct{ Method, URL string }
				Response struct{ Status int }
			}
		}
	}
	if err := json.Unmarshal(b, &har); err != nil {
		t.Fatalf("schemathesis report: %v", err)
	}
	calls := make([]exchange, 0, len(har.Log.Entries))
	for _, e := range har.Log.Entries {
		calls = append(calls, exchange{Method: e.Request.Method, URL: e.Request.URL, Status: e.Response.Status})
	}
	if len(calls) == 0 {
		t.Fatal("schemathesis sent no request")
	}
	return calls
}

// contractData are the ids seedContract stored.
type contractData struct {
	providers, events, objects, sessions []string
}

// toml draws path parameters from the stored ids most of the time (and
// freely otherwise), so every phase reaches real rows: replays that
// succeed, 409 without force, objects read by their owner and 404 for
// anyone else, sessions revoked.
func (d contractData) toml() string {
	var b bytes.Buffer
	dict := func(name string, values []string) {
		fmt.Fprintf(&b, "\n[dictionaries.%s]\nvalues = [", name)
		for i, v := range values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(v))
		}
		b.WriteString("]\n")
	}
	dict("providers", d.providers)
	dict("events", d.events)
	dict("objects", d.objects)
	dict("sessions", d.sessions)
	b.WriteString(`
[parameters]
"path.provider" = { dictionary = "providers", probability = 0.8 }
"path.event_id" = { dictionary = "events", probability = 0.8 }
"path.object_id" = { dictionary = "objects", probability = 0.8 }
"path.id" = { dictionary = "sessions", probability = 0.8 }
`)
	return b.String()
}

// seedContract writes what the phases walk: events in every processing
// state (one unverified, some with "/" and "?" in their ids, one of a
// provider no longer configured), objects owned by carol, alice and bob,
// and live sessions of each, including the ids the spec's examples use.
func seedContract(t *testing.T, dbURL, issuer string) contractData {
	t.Helper()
	d := contractData{providers: []string{"acme", "gone"}}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("seed: %v\n%s", err, sql)
		}
	}
	base := time.Now().Add(-time.Hour)
	for i, state := range []string{"pending", "processing", "succeeded", "ignored_stale", "skipped", "retrying", "dead"} {
		for j, id := range []string{"evt_" + state, "evt/" + state + "?x"} {
			d.events = append(d.events, id)
			payload := fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","data":{"owner":"carol"}}`, id)
			exec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id, processing_state, attempts)
VALUES ('acme', $1, 'payment.succeeded', $2, $3, $4, 'secret1', $5, 1)`, id, payload, base.Add(time.Duration(2*i+j)*time.Minute), !(state == "pending" && j == 1), state)
		}
	}
	exec(`INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id, processing_state)
VALUES ('gone', 'evt_unconfigured', 'x', '{"id":"evt_unconfigured"}', $1, true, 'secret1', 'dead'),
       ('acme', 'evt_1', 'payment.succeeded', '{"id":"evt_1"}', $1, true, 'secret1', 'dead'),
       ('acme', 'evt/1?x', 'payment.succeeded', '{"id":"evt/1?x"}', $1, true, 'secret1', 'dead')`, base)
	// evt_1 and evt/1?x are the contract's own examples of an event id, so
	// the examples phase reads and replays a plain and an escaped id
	// whatever the seed (the stateful links reach the newest event only
	// when a list request happens to carry no filter).
	d.events = append(d.events, "evt_unconfigured", "evt_1", "evt/1?x")
	for _, o := range []struct{ id, owner string }{{"pay_1", "carol"}, {"obj/c2?x", "carol"}, {"obj_a1", "alice"}, {"obj_b1", "bob"}} {
		d.objects = append(d.objects, o.id)
		exec(`INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id) VALUES ('acme', $1, 'thing', 1, $2, 'evt_succeeded')`,
			o.id, fmt.Sprintf(`{"owner":%q}`, o.owner))
	}
	for i, sub := range []string{"alice", "carol", "carol", "alice", "bob"} {
		fam, sid := uuid.New(), uuid.New()
		if i == 0 {
			sid = uuid.MustParse("3f0c2a9e-6d1b-4c8e-9a57-2b1f0d4e8c61") // the spec's example
		}
		d.sessions = append(d.sessions, sid.String())
		h := sha256.Sum256([]byte("cookie-" + sid.String()))
		now := time.Now()
		exec(`INSERT INTO auth_refresh_families (id, issuer, subject, created_at) VALUES ($1, $2, $3, $4)`, fam, issuer, sub, now)
		exec(`INSERT INTO auth_sessions (id, token_hash, issuer, subject, device, family_id, created_at, last_seen_at, absolute_expires_at)
VALUES ($1, $2, $3, $4, 'contract test', $5, $6, $6, $7)`, sid, h[:], issuer, sub, fam, now, now.Add(time.Hour))
	}
	return d
}

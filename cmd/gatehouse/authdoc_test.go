package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// Issue 46: docs/AUTH.md's search examples used a bearer token that the
// dev stack does not accept, and no page said how to get one locally. The
// page's script (after <!-- local-bearer-token -->) is run as written
// against the real OP of `make run` and `gatehouse serve` configured as
// the page says: it signs the test user in, gets a token, and finds the
// event sent by `gatehouse send`.
func TestAuthDocLocalBearerToken(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed by docs/AUTH.md's script: %v (deploy/local/deps.sh)", tool, err)
		}
	}
	doc, err := os.ReadFile("../../docs/AUTH.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- local-bearer-token -->")
	if !ok {
		t.Fatal("docs/AUTH.md has no <!-- local-bearer-token --> block")
	}
	_, after, _ = strings.Cut(after, "```sh\n")
	block, _, _ := strings.Cut(after, "```")
	var script strings.Builder
	for _, line := range strings.Split(block, "\n") {
		script.WriteString(strings.TrimPrefix(line, "  ") + "\n")
	}

	op := testenv.StartOP(t, []string{"http://localhost:8080/callback"})
	dbURL := testenv.PostgresUnmigrated(t)
	cfgPath := writeConfigYAML(t, demoProvider+`api:
  operators: [{issuer: "`+op.Issuer+`", subject: id1}]
  audience: gatehouse-local
  issuers:
    - issuer: "`+op.Issuer+`"
      scope_aliases: {custom_scope: ["events:read", "events:replay"]}
      introspection: {client_id: web, client_secret: secret}
`)
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	getenv := func(k string) string {
		if k == "E2E_SECRET" {
			return e2eSecret
		}
		return ""
	}
	if err := run(context.Background(), []string{"send", "--config", cfgPath, "--url", srv.public, "--provider", "demo", "--id", "evt_doc_1", "--object", "pay_123"},
		getenv, &strings.Builder{}, &strings.Builder{}); err != nil {
		t.Fatalf("send: %v", err)
	}
	sh := exec.Command("bash", "-euo", "pipefail", "-c", script.String())
	sh.Env = append(os.Environ(), "OP="+strings.TrimSuffix(op.Issuer, "/"), "GATEHOUSE="+srv.public)
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"event_id":"evt_doc_1"`) {
		t.Fatalf("the documented script: %v\n%s\nserve: %s", err, out, srv.stderr)
	}
}

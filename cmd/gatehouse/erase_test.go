package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestServeMaintainsStorageAndEraseErasesWithAudit runs the real binary:
// serve's storage maintenance reports its partitions on /metrics, and
// `gatehouse erase` removes a stored payload, keeps the key (the
// redelivery is still a duplicate) and writes the audit row.
func TestServeMaintainsStorageAndEraseErasesWithAudit(t *testing.T) {
	dbURL := testenv.Postgres(t)
	cfgPath := writeConfigYAML(t, demoProvider)
	p := startServe(t, dbURL, cfgPath)
	body := `{"id":"evt_pii","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_1","email":"ann@example.com"}}`
	postSigned(t, p.public, body)

	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`gatehouse_storage_partitions{stage="ingest",table="dedupe_keys"}`, `gatehouse_storage_table_bytes{stage="ingest",table="inbox"}`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	out, err := gatehouse(t, dbURL, "erase", "--config", cfgPath, "--provider", "demo", "--object", "pay_1", "--reason", "ticket 1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "erased demo/object <withheld: no audit key>: 1 event(s)") || strings.Contains(string(out), "pay_1") {
		t.Fatalf("erase: %v %s", err, out)
	}
	out, err = gatehouse(t, dbURL, "erase", "--config", cfgPath, "--provider", "demo", "--event-id", "x", "--object", "y").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "exactly one of") {
		t.Fatalf("erase with two selectors: %v %s", err, out)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var payload, by, selector string
	if err := conn.QueryRow(context.Background(), `SELECT payload::text FROM inbox WHERE event_id = 'evt_pii'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(payload, "example.com") || !strings.Contains(payload, `"erased": true`) {
		t.Fatalf("stored payload after erase: %s", payload)
	}
	if err := conn.QueryRow(context.Background(), `SELECT requested_by, selector FROM erasures`).Scan(&by, &selector); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(by, "gatehouse erase") || selector != "object <withheld: no audit key>" {
		t.Fatalf("audit row: %q %q", by, selector)
	}
	postSigned(t, p.public, body) // the redelivery: acknowledged, not stored again
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM inbox WHERE event_id = 'evt_pii'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("inbox rows of the erased event after a redelivery: %d, %v", n, err)
	}
}

// TestEraseByPathLogsAndAuditsADigest runs the real binary: `gatehouse
// erase --path … --value <e-mail>` with a token-encryption key configured
// prints, logs and audits a keyed digest of the value, never the value,
// and counts what it removed in each table.
func TestEraseByPathLogsAndAuditsADigest(t *testing.T) {
	dbURL := testenv.Postgres(t)
	cfgPath := writeConfigYAML(t, demoProvider)
	p := startServe(t, dbURL, cfgPath)
	const email = "erin.erased@example.com"
	for _, id := range []string{"evt_a", "evt_b"} {
		postSigned(t, p.public, `{"id":"`+id+`","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_9","email":"`+email+`"}}`)
	}
	cmd := gatehouse(t, dbURL, "erase", "--config", cfgPath, "--provider", "demo", "--path", "data.email", "--value", email)
	cmd.Env = append(cmd.Env, "GATEHOUSE_AUTH_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	out, err := cmd.CombinedOutput() // stdout and the log lines (stderr)
	if err != nil || !strings.Contains(string(out), "erased demo/path data.email = hmac-sha256:env:") || !strings.Contains(string(out), ": 2 event(s)") {
		t.Fatalf("erase: %v %s", err, out)
	}
	if !strings.Contains(string(out), `"msg":"events erased"`) && !strings.Contains(string(out), "events erased") {
		t.Errorf("no log line of the erasure: %s", out)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var audit string
	var events int
	if err := conn.QueryRow(context.Background(), `SELECT row_to_json(erasures)::text, events FROM erasures`).Scan(&audit, &events); err != nil {
		t.Fatal(err)
	}
	if events != 2 || !strings.Contains(audit, "hmac-sha256:env:") {
		t.Errorf("audit row %s", audit)
	}
	for where, text := range map[string]string{"output and logs": string(out), "erasures table": audit} {
		if strings.Contains(text, "erin.erased") {
			t.Errorf("the %s hold the erased value: %s", where, text)
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testkit"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const e2eSecret = "whsec_e2e_test_mode_secret_4c1d"

// buildBinary compiles the real gatehouse binary once per test run.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gatehouse-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gatehouse")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

type process struct {
	cmd    *exec.Cmd
	stderr *testkit.SyncBuffer
	public string
	admin  string
}

// demoProvider is the YAML of the demo provider the binary tests sign as;
// extra lines (indented four spaces) may follow it.
const demoProvider = `providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: test-mode, value: "env:E2E_SECRET"}]
    aggregate_id_path: [data.payment_id]
`

// writeConfigYAML writes a config file listening on free loopback ports
// followed by body, and returns its path.
func writeConfigYAML(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gatehouse.yaml")
	cfg := "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\n" + body
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeConfig writes the config with only the demo provider.
func writeConfig(t *testing.T) string {
	t.Helper()
	return writeConfigYAML(t, demoProvider)
}

func gatehouse(t *testing.T, dbURL string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GATEHOUSE_DATABASE_URL="+dbURL, "E2E_SECRET="+e2eSecret)
	return cmd
}

func startServe(t *testing.T, dbURL, cfgPath string) *process {
	t.Helper()
	p, stdout := launch(t, dbURL, "serve", "--config", cfgPath)
	line, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v; stderr: %s", err, p.stderr)
	}
	m := regexp.MustCompile(`public=(\S+) admin=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("unexpected first line %q", line)
	}
	p.public, p.admin = m[1], m[2]
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

func TestBinaryEndToEnd(t *testing.T) {
	dbURL := testenv.PostgresUnmigrated(t)
	cfgPath := writeConfig(t)

	// Connection refused (curl exit 7) before anything listens on the port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	_, err = http.Post("http://"+closedAddr+"/webhooks/demo", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("want connection refused when nothing listens, got %v", err)
	}

	out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "migrations applied") {
		t.Fatalf("migrate: %v %s", err, out)
	}
	p := startServe(t, dbURL, cfgPath)

	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(p.admin + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
	// The printed `gatehouse send` command gets a 204, twice (duplicate).
	for i := 0; i < 2; i++ {
		out, err = gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", p.public, "--id", "evt_e2e_1", "--object", "pay_e2e").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "204") {
			t.Fatalf("send #%d: %v %s", i+1, err, out)
		}
	}
	// So does the curl + openssl one-liner that `make run` prints.
	curlCmd := `ts=$(date +%s); body='{"id":"evt_curl_1","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_123"}}'; ` +
		`sig=$(printf '%s.%s' "$ts" "$body" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //'); ` +
		`curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/webhooks/demo" -H 'Content-Type: application/json' -H "X-Gatehouse-Timestamp: $ts" -H "X-Gatehouse-Signature: $sig" --data "$body"`
	sh := exec.Command("bash", "-c", curlCmd)
	sh.Env = append(os.Environ(), "SECRET="+e2eSecret, "URL="+p.public)
	if out, err := sh.CombinedOutput(); err != nil || string(out) != "204" {
		t.Fatalf("curl one-liner: %v %q", err, out)
	}

	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var inbox, outbox int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM inbox), (SELECT count(*) FROM outbox)`).Scan(&inbox, &outbox); err != nil {
		t.Fatal(err)
	}
	if inbox != 2 || outbox != 2 {
		t.Fatalf("inbox=%d outbox=%d, want 2 and 2", inbox, outbox)
	}

	// SIGTERM shuts down gracefully.
	stopGracefully(t, p, 15*time.Second)
	logs := p.stderr.String()
	if !strings.Contains(logs, `"event_id":"evt_e2e_1"`) || !strings.Contains(logs, `"outcome":"duplicate"`) {
		t.Fatalf("delivery logs missing:\n%s", logs)
	}
	if strings.Contains(logs, e2eSecret) {
		t.Fatal("the signing secret reached the logs")
	}
}

func TestRunRejectsBadInvocations(t *testing.T) {
	var stderr bytes.Buffer
	getenv := func(string) string { return "" }
	if err := run(context.Background(), nil, getenv, io.Discard, &stderr); err == nil {
		t.Fatal("no subcommand accepted")
	}
	if err := run(context.Background(), []string{"nosuch"}, getenv, io.Discard, &stderr); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("unknown subcommand: %v", err)
	}
	if !strings.Contains(stderr.String(), "serve") || !strings.Contains(stderr.String(), "migrate") {
		t.Fatalf("usage lacks subcommands: %s", stderr.String())
	}
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(cfg, []byte("listen: 1\nbogus: true\n"), 0o600)
	err := run(context.Background(), []string{"serve", "--config", cfg}, getenv, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad config: %v", err)
	}
}

// stopGracefully sends SIGTERM and fails the test unless the process exits
// cleanly within timeout.
func stopGracefully(t *testing.T, p *process, timeout time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: exit after SIGTERM: %v", p.cmd.Args[1], err)
		}
	case <-time.After(timeout):
		t.Fatalf("%s: no exit within %s of SIGTERM", p.cmd.Args[1], timeout)
	}
}

// startDev starts `gatehouse dev` with an embedded Kafka on a free port.
func startDev(t *testing.T, dbURL, cfgPath string) (*process, *bufio.Reader) {
	t.Helper()
	return launch(t, dbURL, "dev", "--config", cfgPath, "--kafka-port", "0")
}

// launch starts the real binary with args and returns the process (stderr
// captured) and a reader over its stdout; the process is killed at cleanup.
func launch(t *testing.T, dbURL string, args ...string) (*process, *bufio.Reader) {
	t.Helper()
	p := &process{cmd: gatehouse(t, dbURL, args...), stderr: &testkit.SyncBuffer{}}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p, bufio.NewReader(stdout)
}

package live

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/demoapi"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const secret = "whsec_live_prometheus_test_secret"

// stack is serve, relay and consume on real PostgreSQL and Kafka, scraped
// by a real Prometheus loaded with copies of the shipped rules.
type stack struct {
	t                    *testing.T
	serve, relay, consum *testenv.Proc
	prom                 string // http://127.0.0.1:port
	am                   *alerting
}

// startStack starts everything; rewrite edits the rule files' text before
// Prometheus loads them (the test's copies only).
func startStack(t *testing.T, rewrite func(file, text string) string) *stack {
	t.Helper()
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("the prometheus server is not installed (deploy/local/deps.sh installs Debian's prometheus package): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := testenv.BuildGatehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	api := httptest.NewServer(demoapi.Handler(nil))
	t.Cleanup(api.Close)
	id := randHex()
	cfgPath := filepath.Join(dir, "gatehouse.yaml")
	cfg := fmt.Sprintf(`relay: {slot: live_%[1]s, republish_after: 1h}
consumers: {group: live-%[1]s, session_timeout: 6s}
providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: live, value: "env:LIVE_SECRET"}]
    aggregate_id_path: [data.payment_id]
    topic: live.%[1]s.demo
    api_url: %[2]s
`, id, api.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GATEHOUSE_DATABASE_URL="+dbURL, "GATEHOUSE_KAFKA_BROKERS="+strings.Join(brokers, ","),
		"LIVE_SECRET="+secret, "GATEHOUSE_LOG_LEVEL=warn")
	migrate := exec.CommandContext(ctx, bin, "migrate", "--config", cfgPath)
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	s := &stack{t: t}
	procs := map[string]**testenv.Proc{"serve": &s.serve, "relay": &s.relay, "consume": &s.consum}
	for _, sub := range []string{"serve", "relay", "consume"} {
		p, err := testenv.NewProc(sub, bin, sub, cfgPath, env, filepath.Join(dir, sub+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatalf("%v\n%s", err, tail(p.LogPath))
		}
		t.Cleanup(p.Stop)
		*procs[sub] = p
	}

	// Copies of the shipped rules, rewritten for the test if asked.
	rulesDir := filepath.Join(dir, "rules")
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../*.rules.yml")
	if len(files) == 0 {
		t.Fatal("no deploy/prometheus/*.rules.yml")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if rewrite != nil {
			text = rewrite(filepath.Base(f), text)
		}
		if err := os.WriteFile(filepath.Join(rulesDir, filepath.Base(f)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.am = startAlertmanager(t, dir)
	promAddr, _ := testenv.FreeAddr()
	promCfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
alerting:
  alertmanagers: [{static_configs: [{targets: ["%s"]}]}]
rule_files: ["%s/*.yml"]
scrape_configs:
  - {job_name: gatehouse-serve, static_configs: [{targets: ["%s"]}]}
  - {job_name: gatehouse-relay, static_configs: [{targets: ["%s"]}]}
  - {job_name: gatehouse-consume, static_configs: [{targets: ["%s"]}]}
`, s.am.addr, rulesDir, s.serve.Admin, s.relay.Admin, s.consum.Admin)
	promCfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promCfgPath, []byte(promCfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promLog, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd := exec.Command(promBin, "--config.file="+promCfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)
	cmd.Stdout, cmd.Stderr = promLog, promLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); promLog.Close() })
	s.prom = "http://" + promAddr
	s.waitFor("Prometheus scraping all three processes", time.Minute, func() bool {
		v, err := s.query(`count(up{job=~"gatehouse-.*"} == 1)`)
		return err == nil && len(v) == 1 && v[0].Value[1] == "3"
	})
	return s
}

// send posts one signed delivery (or a badly signed one) of event id.
func (s *stack) send(id string, good bool) int {
	body := fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_%s"}}`, id, id)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	key := secret
	if !good {
		key = "not the secret"
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + "." + body))
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.serve.Public+"/webhooks/demo", bytes.NewReader([]byte(body)))
	req.Header.Set("X-Gatehouse-Timestamp", ts)
	req.Header.Set("X-Gatehouse-Signature", hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query evaluates expr now through Prometheus's HTTP API.
func (s *stack) query(expr string) ([]sample, error) {
	resp, err := http.Get(s.prom + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", expr, r.Error)
	}
	var out []sample
	_ = json.Unmarshal(r.Data.Result, &out) // scalars and strings decode to nothing
	return out, nil
}

// firing reports whether alert is firing.
func (s *stack) firing(alert string) bool {
	v, err := s.query(`ALERTS{alertname="` + alert + `",alertstate="firing"}`)
	return err == nil && len(v) > 0
}

func (s *stack) waitFor(what string, limit time.Duration, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %v waiting for %s\nrelay log:\n%s", limit, what, tail(s.relay.LogPath))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// scrape returns the names of the metric families a process exports.
func scrape(t *testing.T, admin string) map[string]bool {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		names[name] = true
	}
	return names
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func randHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

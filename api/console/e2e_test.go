package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/demoapi"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestConsoleInChromium runs the real binary (`gatehouse dev`: serve, relay
// and consumers) with the real OP, real PostgreSQL and Kafka, and drives
// headless Chromium: the operator signs in, sees a dead event, replays it
// from the dead-letter page and watches it become succeeded (the demo
// provider's API answers now); a payload full of markup executes nothing;
// the OP's second user, not an operator, gets 403. Screenshots of every
// page go to testdata/artifacts/.
func TestConsoleInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	base := fmt.Sprintf("http://localhost:%d", port)
	op := testenv.StartOP(t, []string{base + "/callback"})
	dir := t.TempDir()
	bin, err := testenv.BuildGatehouse(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	api := httptest.NewServer(demoapi.Handler(nil))
	defer api.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	id := fmt.Sprintf("%d", time.Now().UnixNano())
	cfg := fmt.Sprintf(`listen: "127.0.0.1:%d"
admin_listen: "127.0.0.1:0"
relay: {slot: console_%[2]s}
consumers: {group: console-%[2]s, retry_delays: [1s]}
auth:
  issuer: %[3]q
  client_id: %[4]q
  client_secret: %[5]q
  redirect_url: "%[6]s/callback"
  encryption_keys: [{id: k1, value: %[7]q}]
api:
  operators: [{issuer: %[3]q, subject: %[8]q}]
providers:
  demo:
    scheme: reference
    timestamp_header: X-Gatehouse-Timestamp
    signature_header: X-Gatehouse-Signature
    secrets: [{id: s1, value: whsec_console_test_secret}]
    aggregate_id_path: [data.payment_id]
    topic: console.%[2]s.demo
    api_url: %[9]s
`, port, id, op.Issuer, op.ClientID, op.ClientSecret, base, base64.StdEncoding.EncodeToString(key), op.Subject, api.URL)
	cfgPath := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GATEHOUSE_DATABASE_URL="+dbURL, "GATEHOUSE_KAFKA_BROKERS="+strings.Join(brokers, ","))
	migrate := exec.CommandContext(ctx, bin, "migrate", "--config", cfgPath)
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	admin, _ := testenv.FreeAddr()
	dev := &testenv.Proc{Name: "dev", Bin: bin, Args: []string{"dev", "--config", cfgPath},
		Env: append(env, "GATEHOUSE_ADMIN_LISTEN="+admin), Admin: admin, LogPath: filepath.Join(dir, "dev.log")}
	if err := dev.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Stop)

	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// A dead event (its API call failed before the provider's API was
	// fixed) and one whose payload is all markup.
	for _, e := range [][2]string{
		{"evt_dead_1", `{"id":"evt_dead_1","type":"payment.succeeded","created_at":"2026-11-23T10:00:00Z","data":{"payment_id":"pay_console"}}`},
		{"evt_markup", `{"id":"<script>window.pwned=1</script>","type":"payment.succeeded","<img src=x onerror=window.pwned=2>":"\"><svg onload=window.pwned=3>","data":{"payment_id":"pay_markup"}}`},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state, attempts, last_error_class, last_error)
VALUES ('demo', $1, 'payment.succeeded', $2::jsonb, true, 's1', 'dead', 4, 'transient', 'GET /v1/payments/pay_console: 503')`, e[0], e[1]); err != nil {
			t.Fatal(err)
		}
	}

	browser := testenv.StartBrowser(t)
	tab, tcancel := chromedp.NewContext(browser)
	defer tcancel()
	tab, tcancel2 := context.WithTimeout(tab, 3*time.Minute)
	defer tcancel2()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1200, 900)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join("testdata", "artifacts"), 0o755); err != nil { // git-ignored
		t.Fatal(err)
	}
	shot := func(name string) {
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "artifacts", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	where := func() string {
		loc, _ := chromedp.Run(tab, chromedp.Location())
		body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
		return loc + ": " + body
	}
	signIn := func(user string) {
		t.Helper()
		err := chromedp.Do(tab,
			chromedp.Navigate(base+"/console/dead"),
			chromedp.WaitVisible(chromedp.ID("signin")),
			chromedp.Click(chromedp.ID("signin")),
			chromedp.WaitVisible(chromedp.ID("username")),
			chromedp.SendKeys(chromedp.ID("username"), user),
			chromedp.SendKeys(chromedp.ID("password"), op.Password),
			chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		)
		if err != nil {
			t.Fatalf("sign in as %s: %v (%s)\n%s", user, err, where(), tailFile(dev.LogPath))
		}
	}
	signIn(op.Username)
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("form.replay-many"))); err != nil {
		t.Fatalf("dead-letter page after sign-in: %v (%s)\n%s", err, where(), tailFile(dev.LogPath))
	}
	shot("dead-letters")

	// The markup payload executes nothing on its page.
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/events/demo/evt_markup"), chromedp.WaitVisible(chromedp.CSS("pre.payload"))); err != nil {
		t.Fatal(err)
	}
	if pwned, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.pwned !== undefined`)); err != nil || pwned {
		t.Fatalf("markup payload: executed=%v err=%v", pwned, err)
	}
	shot("event-markup")

	// Replay the dead event from its page; watch it become succeeded.
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/events/demo/evt_dead_1"),
		chromedp.WaitVisible(chromedp.CSS("button.replay")), chromedp.Click(chromedp.CSS("button.replay"))); err != nil {
		t.Fatalf("replay: %v", err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		msg, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("span.progress")))
		if strings.Contains(msg, "replayed") {
			break
		}
		if time.Now().After(deadline) || strings.Contains(msg, "refused") {
			t.Fatalf("replay answer: %q\n%s", msg, tailFile(dev.LogPath))
		}
		time.Sleep(200 * time.Millisecond)
	}
	status := ""
	for status != "succeeded" {
		if time.Now().After(deadline) {
			t.Fatalf("the replayed event is %q, not succeeded\n%s", status, tailFile(dev.LogPath))
		}
		time.Sleep(500 * time.Millisecond)
		if err := chromedp.Do(tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("state"))); err != nil {
			t.Fatal(err)
		}
		status, _ = chromedp.Run(tab, chromedp.Text(chromedp.ID("state")))
	}
	shot("event-succeeded")

	// A failure issue holding a dead event: acknowledge it, then replay
	// every dead event of it from its page (app.js through the API with
	// its CSRF header); the event ends succeeded.
	deadline = time.Now().Add(90 * time.Second)
	if _, err := pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state, attempts, last_error_class, last_error)
VALUES ('demo', 'evt_dead_2', 'payment.succeeded', '{"id":"evt_dead_2","type":"payment.succeeded","created_at":"2026-11-23T10:00:00Z","data":{"payment_id":"pay_console"}}', true, 's1', 'dead', 4, 'transient', 'GET /v1/payments/pay_console: 503')`); err != nil {
		t.Fatal(err)
	}
	var issue int64
	if err := pool.QueryRow(ctx, `WITH i AS (INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error, event_count, failures, event_types, sample_event_ids)
VALUES ('demo', 'fetch', 'f00d', 'transient', 'GET /v<n>/payments/pay_console: <n>', 'GET /v1/payments/pay_console: 503', 1, 4, '{payment.succeeded}', '{evt_dead_2}') RETURNING id)
INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at) SELECT i.id, 'demo', 'evt_dead_2', x.received_at FROM i, inbox x
WHERE x.provider = 'demo' AND x.event_id = 'evt_dead_2' RETURNING issue_id`).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	issueURL := fmt.Sprintf("%s/console/issues/%d", base, issue)
	if err := chromedp.Do(tab, chromedp.Navigate(issueURL), chromedp.WaitVisible(chromedp.CSS(`button.issue-status[data-status="acknowledged"]`)),
		chromedp.Click(chromedp.CSS(`button.issue-status[data-status="acknowledged"]`))); err != nil {
		t.Fatalf("acknowledge: %v (%s)", err, where())
	}
	for st := ""; st != "acknowledged"; {
		if time.Now().After(deadline) {
			t.Fatalf("the issue is %q after its acknowledge button (%s)", st, where())
		}
		time.Sleep(200 * time.Millisecond)
		if err := pool.QueryRow(ctx, `SELECT status FROM failure_issues WHERE id = $1`, issue).Scan(&st); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate(issueURL), chromedp.WaitVisible(chromedp.CSS("button.issue-replay")),
		chromedp.Click(chromedp.CSS("button.issue-replay"))); err != nil {
		t.Fatalf("replay the issue: %v", err)
	}
	for {
		msg, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("button.issue-replay + span.progress")))
		if strings.Contains(msg, "replayed 1") {
			break
		}
		if time.Now().After(deadline) || strings.Contains(msg, "refused") {
			t.Fatalf("the issue's replay answered %q\n%s", msg, tailFile(dev.LogPath))
		}
		time.Sleep(200 * time.Millisecond)
	}
	shot("issue")
	for st := ""; st != "succeeded"; {
		if time.Now().After(deadline) {
			t.Fatalf("evt_dead_2 is %q after the issue's replay\n%s", st, tailFile(dev.LogPath))
		}
		time.Sleep(300 * time.Millisecond)
		if err := pool.QueryRow(ctx, `SELECT processing_state FROM inbox WHERE provider = 'demo' AND event_id = 'evt_dead_2'`).Scan(&st); err != nil {
			t.Fatal(err)
		}
	}
	// Deliveries through the real receiver reach the charts (the rollup
	// flushes every 10 s): the hour's total counts them, and its line is
	// drawn from the same aggregates.
	for i := range 5 {
		body := fmt.Sprintf(`{"id":"evt_chart_%d","type":"payment.succeeded","created_at":"2026-11-23T10:00:00Z","data":{"payment_id":"pay_chart_%d"}}`, i, i)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte("whsec_console_test_secret"))
		mac.Write([]byte(ts + "." + body))
		req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/demo", strings.NewReader(body))
		req.Header.Set("X-Gatehouse-Timestamp", ts)
		req.Header.Set("X-Gatehouse-Signature", hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delivery %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	for chartDeadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/charts?provider=demo"), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
			t.Fatal(err)
		}
		n, err := chromedp.Run(tab, chromedp.Evaluate[int](`Number(document.getElementById("accepted-hour").textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if n >= 5 { // the flush came: the line rises above zero, the queues are sampled
			break
		}
		if time.Now().After(chartDeadline) {
			t.Fatalf("the charts count %d accepted 30 s after 5 deliveries (%s)", n, where())
		}
	}
	shot("charts")
	for name, path := range map[string]string{"overview": "/console/", "events": "/console/events?provider=demo", "issues": "/console/issues"} {
		if err := chromedp.Do(tab, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main h1"))); err != nil {
			t.Fatal(err)
		}
		shot(name)
	}

	// The OP's second user is no operator.
	if _, err := chromedp.Call(tab, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	signIn("test-user2")
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS("p.problem"))); err != nil {
		t.Fatalf("non-operator: %v (%s)", err, where())
	}
	if body, _ := chromedp.Run(tab, chromedp.Text(chromedp.CSS("p.problem"))); !strings.Contains(body, "operator role is required") {
		t.Fatalf("non-operator sees %q", body)
	}
	shot("forbidden")
}

func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

package live

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// receiver stands in for one notification service (Slack's incoming
// webhook, PagerDuty's Events API): it records every request body.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"success","message":"Event processed"}`))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// got reports whether a request body held every one of parts.
func (r *receiver) got(parts ...string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(b, p)
		}
		if all {
			return true
		}
	}
	return false
}

// alerting is a real Alertmanager loaded with a copy of the shipped
// deploy/alertmanager/alertmanager.yml, whose secrets files name local
// receivers: slack for Slack, pagerduty for PagerDuty.
type alerting struct {
	addr             string
	slack, pagerduty *receiver
	routingKey       string
}

// startAlertmanager starts Debian's prometheus-alertmanager (installed by
// deploy/local/deps.sh) with the shipped routing; only the secrets'
// paths, the PagerDuty endpoint, the SMTP relay and the grouping delays
// are the test's.
func startAlertmanager(t *testing.T, dir string) *alerting {
	t.Helper()
	bin, err := exec.LookPath("prometheus-alertmanager")
	if err != nil {
		t.Fatalf("Alertmanager is not installed (deploy/local/deps.sh installs Debian's prometheus-alertmanager): %v", err)
	}
	a := &alerting{slack: newReceiver(t), pagerduty: newReceiver(t), routingKey: "R0UT1NGKEY" + randHex()}
	secrets := filepath.Join(dir, "am-secrets")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"slack-webhook-url": a.slack.srv.URL + "/services/T0/B0/x", "pagerduty-routing-key": a.routingKey, "smtp-password": "x"} {
		if err := os.WriteFile(filepath.Join(secrets, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("../../alertmanager/alertmanager.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(
		"/etc/alertmanager/secrets/", secrets+"/",
		"group_wait: 30s", "group_wait: 1s",
		"group_interval: 5m", "group_interval: 1s",
		"smtp.example.com:587", "127.0.0.1:1",
		"      - routing_key_file:", "      - url: "+a.pagerduty.srv.URL+"/v2/enqueue\n        routing_key_file:",
	).Replace(string(b))
	if !strings.Contains(text, a.pagerduty.srv.URL) || !strings.Contains(text, secrets) {
		t.Fatal("deploy/alertmanager/alertmanager.yml changed shape: the test could not point it at its receivers")
	}
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := testenv.FreeAddr()
	logf, _ := os.Create(filepath.Join(dir, "alertmanager.log"))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "am-data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	a.addr = addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Alertmanager not ready:\n%s", tail(filepath.Join(dir, "alertmanager.log")))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The shipped routing is valid for the Alertmanager it is tested with.
func TestAlertmanagerConfigChecks(t *testing.T) {
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Fatalf("amtool is not installed (deploy/local/deps.sh installs Debian's prometheus-alertmanager): %v", err)
	}
	out, err := exec.Command(amtool, "check-config", "../../alertmanager/alertmanager.yml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	// Every severity the rules use is routed somewhere other than the
	// default alone.
	b, _ := os.ReadFile("../../alertmanager/alertmanager.yml")
	for _, sev := range []string{"page", "ticket", "warn"} {
		if !strings.Contains(string(b), `severity="`+sev+`"`) {
			t.Errorf("no route for severity %s", sev)
		}
	}
}

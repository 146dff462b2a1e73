package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Keycloak is a real Keycloak (keycloak-quarkus-dist, fetched once from
// Maven Central by deploy/local/keycloak-fetch.sh) in dev mode with an
// in-memory database and the realm of testenv/keycloak/realm.json: a
// confidential client with PKCE S256 required, refresh-token rotation with
// reuse 0, a back-channel logout URL and a test user. It starts in about
// 20 s on the 2-core CI machine.
type Keycloak struct {
	URL          string // http://localhost:<port>
	Issuer       string // URL + "/realms/gatehouse"
	ClientID     string
	ClientSecret string
	Username     string
	Password     string
	LogFile      string
}

// StartKeycloak starts Keycloak for a relying party at base (the redirect,
// post-logout and back-channel logout URLs are registered under it) and
// imports the realm. It is stopped by t.Cleanup; any failure fails the test
// with the log's tail.
func StartKeycloak(t testing.TB, base string) *Keycloak {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fetch := exec.Command(filepath.Join(root, "deploy/local/keycloak-fetch.sh"))
	fetch.Stderr = os.Stderr
	out, err := fetch.Output()
	if err != nil {
		t.Fatalf("testenv: keycloak: fetch from Maven Central: %v (run deploy/local/deps.sh)", err)
	}
	home := strings.TrimSpace(string(out))
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	mgmt, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	k := &Keycloak{URL: fmt.Sprintf("http://localhost:%d", port), ClientID: "gatehouse", ClientSecret: "gatehouse-client-secret",
		Username: "alice", Password: "alice-password-1", LogFile: filepath.Join(t.TempDir(), "keycloak.log")}
	k.Issuer = k.URL + "/realms/gatehouse"
	logf, err := os.Create(k.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(home, "bin/kc.sh"), "start-dev", fmt.Sprintf("--http-port=%d", port),
		fmt.Sprintf("--http-management-port=%d", mgmt), "--db=dev-mem", "--hostname-strict=false")
	cmd.Env = append(os.Environ(), "KC_BOOTSTRAP_ADMIN_USERNAME=admin", "KC_BOOTSTRAP_ADMIN_PASSWORD=admin-password-1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: keycloak: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	fail := func(format string, args ...any) {
		t.Helper()
		b, _ := os.ReadFile(k.LogFile)
		t.Fatalf("testenv: keycloak: "+format+"\n%s", append(args, lastLines(b, 40))...)
	}
	start := time.Now()
	for {
		resp, err := http.Get(k.URL + "/realms/master")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case <-done:
			fail("exited during start")
		case <-time.After(300 * time.Millisecond):
		}
		if time.Since(start) > 3*time.Minute {
			fail("not ready after 3 minutes")
		}
	}
	realm, err := os.ReadFile(filepath.Join(root, "internal/testenv/keycloak/realm.json"))
	if err != nil {
		t.Fatal(err)
	}
	realm = bytes.ReplaceAll(realm, []byte("${BASE}"), []byte(base))
	if code, body := k.Admin(t, http.MethodPost, "/admin/realms", realm); code != http.StatusCreated {
		fail("import realm: %d %s", code, body)
	}
	t.Logf("keycloak at %s (ready in %v)", k.URL, time.Since(start).Round(time.Second))
	return k
}

// Admin calls Keycloak's admin REST API as the bootstrap admin and returns
// the status and body.
func (k *Keycloak) Admin(t testing.TB, method, path string, body []byte) (int, string) {
	t.Helper()
	form := url.Values{"grant_type": {"password"}, "client_id": {"admin-cli"}, "username": {"admin"}, "password": {"admin-password-1"}}
	resp, err := http.PostForm(k.URL+"/realms/master/protocol/openid-connect/token", form)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("testenv: keycloak admin token: %d %v", resp.StatusCode, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, k.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

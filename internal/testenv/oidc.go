package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// opPackage is the zitadel/oidc example OpenID Provider, pinned through the
// `tool` directive in go.mod (so its version is the one in go.mod/go.sum).
const opPackage = "github.com/zitadel/oidc/v3/example/server"

// OP is a real OpenID Provider (zitadel/oidc's certified example server) running as its own process.
//
// The example server (example/server/main.go in zitadel/oidc v3) is configured only
// through environment variables: PORT (listen port, all interfaces), REDIRECT_URI
// (comma-separated, replaces the redirect URIs of every client it registers) and
// USERS_FILE (unused here). Its issuer is always "http://localhost:<PORT>/" (with the
// trailing slash), so browsers and relying parties must use the host name
// "localhost", never 127.0.0.1.
//
// Clients registered by the example (storage/client.go), all with the redirect URIs
// passed to StartOP, matched exactly (scheme, host, port, path, trailing slash):
//
//   - "web" / "secret": confidential web client, client_secret_basic (use
//     oauth2.AuthStyleInHeader), response type code, grants authorization_code +
//     refresh_token + token exchange, PKCE S256 optional but verified when sent,
//     opaque bearer access tokens. Exposed as ClientID/ClientSecret.
//   - "native": public client (token_endpoint_auth_method none), PKCE S256 mandatory,
//     grants authorization_code + refresh_token, loopback redirect URIs (port
//     ignored for http://localhost). Exposed as PublicClientID.
//   - "api" / "secret": a second web client, same rules as "web".
//
// Users (storage/user.go): "test-user@localhost" / "verysecure" with subject "id1"
// (exposed as Username/Password/Subject), and "test-user2" / "verysecure" (subject "id2").
// The login form at /login/username has inputs #username and #password and a
// button[type=submit].
//
// Capabilities: discovery, JWKS (RS256), authorize at /auth, token at /oauth/token,
// userinfo, introspection, revocation (/revoke), end_session (/end_session, default
// redirect /logged-out), refresh tokens when scope offline_access is requested, with
// rotation (each refresh returns a new refresh token and the old one stops working;
// reuse of an old one does NOT revoke the family). No back-channel logout, no RFC 9207
// `iss` authorization response parameter.
type OP struct {
	// Issuer is exactly the discovery issuer: "http://localhost:<port>/".
	Issuer string
	// ClientID and ClientSecret are the confidential client: "web" / "secret".
	ClientID     string
	ClientSecret string
	// PublicClientID is the public PKCE client: "native" (no secret).
	PublicClientID string
	// Username, Password and Subject are the test user: "test-user@localhost",
	// "verysecure", "id1".
	Username string
	Password string
	Subject  string
	// RedirectURIs are the URIs registered for every client.
	RedirectURIs []string
	// LogFile holds the OP's debug log (it is printed when the test fails).
	LogFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// StartOP builds (once per test binary, cached in a temp dir or under ~/.cache/gatehouse) and starts the zitadel example OP on a free port, with the client(s) gatehouse needs. Waits for /.well-known/openid-configuration.
//
// redirectURIs must be non-empty and are registered for every client; use
// http://localhost:<port>/... so that cookies and the issuer share the host name.
// The process is stopped by t.Cleanup. StartOP calls t.Fatal on any failure.
func StartOP(t testing.TB, redirectURIs []string) *OP {
	t.Helper()
	if len(redirectURIs) == 0 {
		t.Fatal("testenv: StartOP needs at least one redirect URI")
	}
	for _, u := range redirectURIs {
		if strings.Contains(u, ",") {
			t.Fatalf("testenv: redirect URI %q contains a comma", u)
		}
	}
	bin, err := opBinary()
	if err != nil {
		t.Fatalf("testenv: build OP: %v", err)
	}
	logFile := filepath.Join(t.TempDir(), "op.log")
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		op, err := opStart(bin, logFile, redirectURIs)
		if err == nil {
			t.Cleanup(func() {
				op.Stop()
				if t.Failed() {
					if b, err := os.ReadFile(logFile); err == nil {
						t.Logf("OP log (%s), last lines:\n%s", logFile, lastLines(b, 40))
					}
				}
			})
			return op
		}
		lastErr = err // most likely the free port was taken in between; try another
	}
	b, _ := os.ReadFile(logFile)
	t.Fatalf("testenv: start OP: %v\n%s", lastErr, lastLines(b, 40))
	return nil
}

// Stop kills the OP process and waits for it to exit. It is safe to call twice.
func (o *OP) Stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil {
		return
	}
	_ = o.cmd.Process.Kill()
	<-o.done
	o.cmd = nil
}

func opStart(bin, logFile string, redirectURIs []string) (*OP, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logFile)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd := exec.Command(bin)
	cmd.Env = append(opCleanEnv(os.Environ()),
		"PORT="+strconv.Itoa(port),
		"REDIRECT_URI="+strings.Join(redirectURIs, ","),
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	o := &OP{
		Issuer:         fmt.Sprintf("http://localhost:%d/", port),
		ClientID:       "web",
		ClientSecret:   "secret",
		PublicClientID: "native",
		Username:       "test-user@localhost",
		Password:       "verysecure",
		Subject:        "id1",
		RedirectURIs:   append([]string(nil), redirectURIs...),
		LogFile:        logFile,
		cmd:            cmd,
		done:           make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(o.done) }()
	if err := opWaitReady(o, 30*time.Second); err != nil {
		o.Stop()
		return nil, err
	}
	return o, nil
}

func opWaitReady(o *OP, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	url := o.Issuer + ".well-known/openid-configuration"
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		select {
		case <-o.done:
			return fmt.Errorf("OP exited before becoming ready: %w", err)
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("OP not ready after %s: %w", timeout, err)
		}
	}
}

// opCleanEnv drops variables the example server reads, so the caller's
// environment cannot change the OP's clients, users or port.
func opCleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PORT", "REDIRECT_URI", "USERS_FILE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

var (
	opBuildOnce sync.Once
	opBuildPath string
	opBuildErr  error
)

// opBinary builds the example OP once per test binary. The executable is cached
// under $XDG_CACHE_HOME/gatehouse (or ~/.cache/gatehouse), keyed by the Go version
// and the contents of go.mod and go.sum, so later test binaries only stat it; if
// the cache is not writable it is built into a temporary directory instead.
func opBinary() (string, error) {
	opBuildOnce.Do(func() { opBuildPath, opBuildErr = opBuild() })
	return opBuildPath, opBuildErr
}

func opBuild() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(runtime.Version() + "\x00" + runtime.GOOS + "/" + runtime.GOARCH + "\x00"))
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]

	bin, err := goTool{name: "zitadel-op", key: key, dir: root, pkg: opPackage}.build(context.Background())
	if err != nil {
		return "", err
	}
	opPruneCache(filepath.Dir(bin), bin)
	return bin, nil
}

// opPruneCache removes OP binaries of older go.mod/go.sum states, leaving any
// touched in the last hour alone (another test binary may be about to run it).
func opPruneCache(dir, keep string) {
	old, _ := filepath.Glob(filepath.Join(dir, "zitadel-op-*"))
	for _, f := range old {
		if fi, err := os.Stat(f); err == nil && f != keep && !strings.Contains(f, ".tmp-") && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(f)
		}
	}
}

// BrowserChromium is where the Debian package "chromium" installs the browser.
const BrowserChromium = "/usr/bin/chromium"

// StartBrowser starts a headless Chromium driven by chromedp and returns the
// context of its first tab (derive tabs with chromedp.NewContext, deadlines with
// context.WithTimeout). If /usr/bin/chromium is missing it runs
// deploy/local/install-chromium.sh first. Chromium runs with --no-sandbox
// --headless --disable-gpu --disable-quic --no-first-run
// --disable-background-networking --disable-component-update --disable-sync and a
// fresh --user-data-dir, so no cookies survive between calls. StartBrowser calls
// t.Fatal (never t.Skip) when the browser cannot start; t.Cleanup closes it.
func StartBrowser(t testing.TB) context.Context {
	t.Helper()
	path, err := browserPath()
	if err != nil {
		t.Fatalf("testenv: chromium: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Do starts the browser and binds its life to the context it gets,
	// so it must not carry a deadline; a watchdog cancels a start that hangs.
	watchdog := time.AfterFunc(60*time.Second, cancel)
	err = chromedp.Do(ctx)
	if !watchdog.Stop() {
		t.Fatalf("testenv: start chromium %s: no answer within 60s: %v", path, err)
	}
	if err != nil {
		t.Fatalf("testenv: start chromium %s: %v", path, err)
	}
	return ctx
}

var (
	browserOnce    sync.Once
	browserExePath string
	browserErr     error
)

// browserPath returns /usr/bin/chromium, installing it once per test binary with
// deploy/local/install-chromium.sh when it is missing.
func browserPath() (string, error) {
	browserOnce.Do(func() {
		if _, err := os.Stat(BrowserChromium); err == nil {
			browserExePath = BrowserChromium
			return
		}
		root, err := RepoRoot()
		if err != nil {
			browserErr = err
			return
		}
		script := filepath.Join(root, "deploy", "local", "install-chromium.sh")
		var stderr strings.Builder
		cmd := exec.Command("bash", script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			browserErr = fmt.Errorf("%s: %w\n%s", script, err, lastLines([]byte(stderr.String()), 20))
			return
		}
		lines := strings.Fields(strings.TrimSpace(string(out)))
		if len(lines) == 0 {
			browserErr = errors.New(script + " printed no path")
			return
		}
		browserExePath = lines[len(lines)-1]
	})
	return browserExePath, browserErr
}

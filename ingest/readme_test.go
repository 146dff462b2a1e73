package ingest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/schemas/providers"

	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/wiring"
)

// readme returns docs/PROVIDERS.md, which holds the provider catalogue
// and the worked examples of "Adding a provider without code" (moved
// there from README.md).
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/PROVIDERS.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/PROVIDERS.md's provider catalogue has a row for every scheme.
func TestReadmeListsEveryScheme(t *testing.T) {
	text := readme(t)
	start := strings.Index(text, "## The provider catalogue")
	end := strings.Index(text, "## Adding a provider without code")
	if start < 0 || end < start {
		t.Fatal("docs/PROVIDERS.md lacks the catalogue section")
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(text[start:end], "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(first, -1) {
			rows[m[1]] = true
		}
	}
	for _, name := range providers.Names() {
		if name != "hmac" && !rows[name] {
			t.Errorf("docs/PROVIDERS.md's catalogue has no row for %q", name)
		}
	}
}

// readmeExample returns the YAML block after marker.
func readmeExample(t *testing.T, marker string) string {
	text := readme(t)
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("docs/PROVIDERS.md lacks %q", marker)
	}
	rest := text[i:]
	a := strings.Index(rest, "```yaml\n") + len("```yaml\n")
	b := strings.Index(rest[a:], "```")
	return rest[a : a+b]
}

// The two worked examples of "Adding a provider without code" load and
// accept a signature computed here from their prose, independently of
// ingest/signature.
func TestReadmeHMACExamples(t *testing.T) {
	at := time.Unix(1_762_000_000, 0)
	secret := "acme-secret-2026"
	getenv := func(k string) string { return map[string]string{"ACME_WEBHOOK_SECRET": secret}[k] }

	cfg, err := config.Parse([]byte("database_url: postgres://x/y\n"+readmeExample(t, "<!-- hmac example 1 -->")), getenv)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"event":{"kind":"order.paid","at":"2026-11-01T10:00:00Z"},"order_id":"o_1"}`
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte("1762000000." + body))
	h := http.Header{"Acme-Signature": {"t=1762000000,s1=" + base64.StdEncoding.EncodeToString(m.Sum(nil))}}
	verifyReadme(t, cfg.Providers["acme"], &signature.Request{Header: h, Body: []byte(body)}, at)

	dir := t.TempDir()
	key := []byte("billr raw key bytes")
	if err := os.WriteFile(dir+"/billr", []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	y := strings.Replace(readmeExample(t, "<!-- hmac example 2 -->"), "file:/run/secrets/billr", "file:"+dir+"/billr", 1)
	cfg, err = config.Parse([]byte("database_url: postgres://x/y\n"+y), getenv)
	if err != nil {
		t.Fatal(err)
	}
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	m = hmac.New(sha256.New, key)
	m.Write([]byte("POST https://hooks.example.com/webhooks/billr?x=1\n" + ms + "\n" + body))
	h = http.Header{"X-Billr-Signature": {"v2=" + hex.EncodeToString(m.Sum(nil))}, "X-Billr-Timestamp": {ms}}
	verifyReadme(t, cfg.Providers["billr"], &signature.Request{Method: "POST", RawQuery: "x=1", Header: h, Body: []byte(body)}, at)
}

func verifyReadme(t *testing.T, p *config.Provider, r *signature.Request, at time.Time) {
	t.Helper()
	v, err := signature.New(wiring.Provider(p).Signature)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(r, at); err != nil {
		t.Fatalf("docs/PROVIDERS.md example does not verify: %v", err)
	}
	r.Body = append([]byte(nil), r.Body...)
	r.Body[len(r.Body)-2] ^= 1
	if _, err := v.Verify(r, at); err == nil {
		t.Fatal("a changed body verifies")
	}
}

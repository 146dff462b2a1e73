package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestServeMountsLoginOverTLS drives the real binary with an auth section and
// the built-in TLS listener: /signin is served over HTTPS and /login
// redirects to the real OP with PKCE and the exact redirect URI.
func TestServeMountsLoginOverTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	redirect := fmt.Sprintf("https://localhost:%d/callback", port)
	op := testenv.StartOP(t, []string{redirect})
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	cfg := fmt.Sprintf(`
listen: "127.0.0.1:%d"
admin_listen: "127.0.0.1:0"
auth:
  issuer: %q
  client_id: %q
  client_secret: %q
  redirect_url: %q
  encryption_keys: [{id: k1, value: %q}]
  tls_cert_file: %q
  tls_key_file: %q
`, port, op.Issuer, op.ClientID, op.ClientSecret, redirect, base64.StdEncoding.EncodeToString(key), certFile, keyFile)
	cfgPath := filepath.Join(dir, "gatehouse.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, testenv.Postgres(t), cfgPath)
	if !strings.HasPrefix(p.public, "https://") {
		t.Fatalf("public listener %s is not HTTPS", p.public)
	}
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	base := fmt.Sprintf("https://localhost:%d", port)
	resp, err := client.Get(base + "/signin?next=/account")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="signin"`) {
		t.Fatalf("signin page: %d", resp.StatusCode)
	}
	resp, err = client.Get(base + "/login?next=/account")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	q := loc.Query()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), op.Issuer) || q.Get("redirect_uri") != redirect ||
		q.Get("code_challenge_method") != "S256" || q.Get("client_id") != op.ClientID {
		t.Fatalf("login redirect %d to %s", resp.StatusCode, loc)
	}
	if c := resp.Cookies(); len(c) != 1 || c[0].Name != "__Host-gatehouse-login" || !c[0].Secure {
		t.Fatalf("pre-login cookie: %+v", c)
	}
}

// selfSigned writes a certificate for localhost and returns its files and a pool trusting it.
func selfSigned(t *testing.T, dir string) (string, string, *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

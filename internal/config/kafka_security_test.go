package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKafkaSecurity(t *testing.T) {
	ca := writeCA(t)
	cfg, err := Parse([]byte(valid+"kafka:\n  brokers: [b:9093]\n  tls: {ca_file: "+ca+"}\n  sasl: {mechanism: SCRAM-SHA-512, username: gh, password: \"env:KPASS\"}\n"),
		env(map[string]string{"DEMO": "x", "KPASS": "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Kafka.TLSConfig(); c == nil || c.RootCAs == nil {
		t.Fatalf("tls config: %+v", c)
	}
	if string(cfg.Kafka.SASLPassword()) != "pw" || cfg.Kafka.SASL.Username != "gh" {
		t.Fatalf("sasl: %q %q", cfg.Kafka.SASL.Username, cfg.Kafka.SASLPassword())
	}
	plain, err := Parse([]byte(valid), env(map[string]string{"DEMO": "x"}))
	if err != nil || plain.Kafka.TLSConfig() != nil {
		t.Fatalf("default is plaintext: %v %v", err, plain.Kafka.TLSConfig())
	}
}

func TestKafkaSecurityErrorsNameTheKey(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ yaml, key string }{
		"missing ca file":    {"  tls: {ca_file: /nonexistent/ca.pem}\n", "kafka.tls.ca_file"},
		"ca file not pem":    {"  tls: {ca_file: " + notPEM + "}\n", "kafka.tls.ca_file"},
		"cert without key":   {"  tls: {cert_file: /x.pem}\n", "kafka.tls.cert_file"},
		"unknown mechanism":  {"  sasl: {mechanism: GSSAPI, username: u, password: p}\n", "kafka.sasl.mechanism"},
		"user, no mechanism": {"  sasl: {username: u}\n", "kafka.sasl.mechanism"},
		"no username":        {"  sasl: {mechanism: SCRAM-SHA-256, password: p}\n", "kafka.sasl.username"},
		"no password":        {"  sasl: {mechanism: SCRAM-SHA-256, username: u}\n", "kafka.sasl.password"},
		"password env unset": {"  sasl: {mechanism: SCRAM-SHA-256, username: u, password: \"env:NOPE\"}\n", "kafka.sasl.password"},
		"plain without tls":  {"  sasl: {mechanism: PLAIN, username: u, password: p}\n", "kafka.sasl.mechanism"},
	} {
		_, err := Parse([]byte(valid+"kafka:\n"+c.yaml), env(map[string]string{"DEMO": "x"}))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err = %v, want one naming %s", name, err, c.key)
		}
	}
}

package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SecureKafka is a broker with a SASL_SSL listener as managed clusters
// offer it: TLS with a certificate from a private CA, SCRAM-SHA-256 and
// SCRAM-SHA-512 authentication, and one SCRAM user.
type SecureKafka struct {
	*Kafka
	Addr     string // the SASL_SSL listener, 127.0.0.1:port
	CAFile   string // PEM of the CA that signed the broker's certificate
	User     string
	Password string
}

// PrivateSecureKafka starts a SecureKafka for one test (its PLAINTEXT
// listener, Kafka.Brokers, is kept for the broker itself and test set-up)
// and stops it when the test ends.
func PrivateSecureKafka(t testing.TB) *SecureKafka {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	libs, err := kafkaLibs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caFile, keystore, err := writeBrokerPKI(dir)
	if err != nil {
		t.Fatalf("broker certificates: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &SecureKafka{Addr: "127.0.0.1:" + strconv.Itoa(port), CAFile: caFile, User: "gatehouse", Password: "scram-" + kafkaUUID()}
	k := &Kafka{libs: libs, log4j: filepath.Join(filepath.Dir(libs), "log4j2.xml"), Dir: dir,
		extraListeners: []string{"SASL_SSL://" + s.Addr},
		extraProps: []string{
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
			"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
			"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
			"listener.name.sasl_ssl.ssl.keystore.type=PEM",
			"listener.name.sasl_ssl.ssl.keystore.location=" + keystore,
		}}
	if k.brokerPort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	if k.controllerPort, err = freePort(); err != nil {
		t.Fatal(err)
	}
	k.Brokers = []string{"127.0.0.1:" + strconv.Itoa(k.brokerPort)}
	if err := k.writeConfig(); err != nil {
		t.Fatal(err)
	}
	if err := k.format(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.start(ctx); err != nil {
		t.Fatalf("start secure kafka: %v", err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	s.Kafka = k
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: s.User, Mechanism: m, Iterations: 4096, Password: s.Password}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("create SCRAM user: %v", err)
		}
	}
	return s
}

// writeBrokerPKI writes a CA certificate (ca.pem) and the broker's PEM
// keystore (its PKCS#8 key and certificate for 127.0.0.1 and localhost).
func writeBrokerPKI(dir string) (caFile, keystore string, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatehouse test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	caFile, keystore = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "broker-keystore.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return "", "", fmt.Errorf("write ca: %w", err)
	}
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(keystore, ks, 0o600); err != nil {
		return "", "", fmt.Errorf("write keystore: %w", err)
	}
	return caFile, keystore, nil
}

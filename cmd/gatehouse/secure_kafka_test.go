package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestSecureKafka runs serve, relay and consume against a broker that only
// speaks SASL_SSL to clients (SCRAM-SHA-512 over TLS with a private CA, as
// managed clusters do), configured through kafka.tls.ca_file and
// kafka.sasl; an event goes through to its final state. A wrong password
// is refused by the broker with SASL_AUTHENTICATION_FAILED.
func TestSecureKafka(t *testing.T) {
	sk := testenv.PrivateSecureKafka(t)
	dbURL := testenv.PostgresUnmigrated(t)
	kafkaYAML := fmt.Sprintf(`kafka:
  brokers: [%q]
  partitions: 2
  tls: {ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: %q, password: "env:E2E_KAFKA_PASSWORD"}
`, sk.Addr, sk.CAFile, sk.User)
	cfgPath := writeConfigYAML(t, kafkaYAML+"consumers:\n  group: secure-e2e\n"+demoProvider+"    topic: secure.events\n")
	t.Setenv("E2E_KAFKA_PASSWORD", sk.Password)
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	relayProc, _ := startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, _ := startLong(t, dbURL, "consume", "--config", cfgPath)
	out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", srv.public, "--id", "evt_secure", "--object", "pay_s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "204") {
		t.Fatalf("send: %v %s", err, out)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st string
		_ = conn.QueryRow(context.Background(), `SELECT processing_state FROM inbox WHERE event_id = 'evt_secure'`).Scan(&st)
		if st == "skipped" { // the demo provider has no api_url: final without an effect
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evt_secure is %q; relay stderr:\n%s\nconsume stderr:\n%s", st, relayProc.stderr, cons.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range []*process{relayProc, cons, srv} {
		if strings.Contains(p.stderr.String(), sk.Password) {
			t.Fatalf("%s logged the SASL password", p.cmd.Args[1])
		}
	}

	// The same client options with a wrong password: refused.
	cfg, err := config.Parse([]byte(kafkaYAML), func(k string) string {
		if k == "E2E_KAFKA_PASSWORD" {
			return "wrong-password"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(kafka.SecurityOpts(kafka.SecurityOf(&cfg.Kafka)), kgo.SeedBrokers(sk.Addr), kgo.RequestRetries(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = cl.Ping(ctx)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

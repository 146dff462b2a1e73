package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestKafkaUnreachableAtStart starts `relay` and `consume` while their only
// broker is down: both keep running, log which brokers failed, and answer
// /readyz 503 naming kafka; once the broker is back they become ready and
// a signed webhook goes all the way to a final state.
func TestKafkaUnreachableAtStart(t *testing.T) {
	k := testenv.PrivateKafka(t)
	if err := k.Kill(); err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.PostgresUnmigrated(t)
	cfgPath := writeConfig(t)
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(k.Brokers, ","))
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	srv := startServe(t, dbURL, cfgPath)
	relayProc, relayAdmin := startLong(t, dbURL, "relay", "--config", cfgPath)
	consumeProc, consumeAdmin := startLong(t, dbURL, "consume", "--config", cfgPath)
	ready := func(admin string) (int, string) {
		resp, err := http.Get(admin + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	metrics := func(admin string) string {
		resp, err := http.Get(admin + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nrelay stderr:\n%s\nconsume stderr:\n%s", what, relayProc.stderr, consumeProc.stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, p := range []struct {
		name, admin string
		proc        *process
	}{{"relay", relayAdmin, relayProc}, {"consume", consumeAdmin, consumeProc}} {
		code, body := ready(p.admin)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "kafka") {
			t.Errorf("%s /readyz with the broker down: %d %q, want 503 naming kafka", p.name, code, body)
		}
		waitUntil(p.name+" naming the broker", func() bool { return strings.Contains(p.proc.stderr.String(), k.Brokers[0]) })
		if m := metrics(p.admin); !strings.Contains(m, `gatehouse_dependency_up{dependency="kafka"} 0`) ||
			!strings.Contains(m, `gatehouse_dependency_up{dependency="database"} 1`) {
			t.Errorf("%s metrics with the broker down lack the dependency gauges", p.name)
		}
	}
	// A delivery is acknowledged (committed) while Kafka is down.
	postSigned(t, srv.public, `{"id":"evt_kafka_down","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_1"}}`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := k.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	for _, admin := range []string{relayAdmin, consumeAdmin} {
		waitUntil("ready after the broker came back", func() bool { code, _ := ready(admin); return code == http.StatusOK })
		if m := metrics(admin); !strings.Contains(m, `gatehouse_dependency_up{dependency="kafka"} 1`) {
			t.Errorf("%s: kafka gauge not 1 after the broker came back", admin)
		}
	}
	waitUntil("the event final", func() bool {
		return strings.Contains(inboxState(t, dbURL, "evt_kafka_down"), "skipped")
	})
	for _, p := range []*process{relayProc, consumeProc} {
		if p.cmd.ProcessState != nil {
			t.Fatalf("%s exited: %v", p.cmd.Args[1], p.cmd.ProcessState)
		}
	}
}

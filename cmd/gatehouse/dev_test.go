package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// `gatehouse dev` with no brokers configured: serve + relay in one process
// over an embedded Kafka; a signed event sent to it shows up, keyed by its
// object and with CloudEvents headers, in `gatehouse tail`.
func TestBinaryDevAndTail(t *testing.T) {
	dbURL := testenv.Postgres(t)
	cfgPath := writeConfig(t)
	p, r := startDev(t, dbURL, cfgPath)
	var brokers, public string
	for brokers == "" || public == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("dev output ended: %v; stderr: %s", err, p.stderr)
		}
		if m := regexp.MustCompile(`embedded Kafka \(in memory\) at (\S+)`).FindStringSubmatch(line); m != nil {
			brokers = m[1]
		}
		if m := regexp.MustCompile(`public=(\S+)`).FindStringSubmatch(line); m != nil {
			public = m[1]
		}
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()

	out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", public, "--id", "evt_dev_1", "--object", "pay_dev").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "204") {
		t.Fatalf("send: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tail := gatehouse(t, dbURL, "tail", "--config", cfgPath, "--brokers", brokers, "--topic", "gatehouse.webhooks.demo", "--from-beginning", "--count", "1")
	env := tail.Env
	tail = exec.CommandContext(ctx, tail.Path, tail.Args[1:]...)
	tail.Env = env
	var tailErr bytes.Buffer
	tail.Stderr = &tailErr
	out, err = tail.Output()
	if err != nil {
		t.Fatalf("tail: %v %s %s; dev stderr: %s", err, out, tailErr.String(), p.stderr)
	}
	var rec struct {
		Topic   string            `json:"topic"`
		Key     string            `json:"key"`
		Headers map[string]string `json:"headers"`
		Value   map[string]any    `json:"value"`
	}
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatalf("tail printed %q: %v", out, err)
	}
	if rec.Key != "pay_dev" || rec.Headers["ce_id"] != "evt_dev_1" || rec.Headers["ce_source"] != "/webhooks/demo" || rec.Value["id"] != "evt_dev_1" {
		t.Fatalf("unexpected record %s", out)
	}
}

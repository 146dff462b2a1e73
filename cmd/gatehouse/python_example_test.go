package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// pythonExample is the interpreter of the virtual environment deps.sh
// builds from examples/python/requirements.txt; the test fails (never
// skips) without it.
func pythonExample(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(root, "bin", "pyexample", "bin", "python")
	want, err := os.ReadFile(filepath.Join(root, "examples", "python", "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(filepath.Join(root, "bin", "pyexample", "requirements.txt"))
	if _, statErr := os.Stat(py); statErr != nil || err != nil || !bytes.Equal(want, have) {
		t.Fatalf("bin/pyexample does not hold examples/python/requirements.txt (%v %v): run deploy/local/deps.sh (make test runs it)", statErr, err)
	}
	return py
}

// pyLine is one line of examples/python/consume.py's output.
type pyLine struct {
	Erasure *struct {
		ID        string
		ErasureID int64    `json:"erasure_id"`
		EventIDs  []string `json:"event_ids"`
		Erased    []string
	}
	Event, Duplicate, Rejected *struct {
		Topic, Key, ID, Source, Type, Time, Partitionkey string
		OutboxID                                         string `json:"outbox_id"`
		Error                                            string
		Data                                             map[string]any
	}
}

// TestPythonConsumerExample runs the data-team example,
// examples/python/consume.py (confluent-kafka, the CloudEvents SDK's Kafka
// binding, jsonschema against schemas/*.schema.json), against the real
// broker after real signed deliveries — one of every catalogue provider,
// and the demo's — went through the `serve` and `relay` binaries: every
// record is accepted by the SDK and both JSON Schemas; a
// duplicate webhook delivery makes no record; a record the relay delivers
// twice (at least once) is reported as a duplicate and yields no second
// event; ids, keys, outbox ids and ce_time (exact text, nanoseconds kept;
// a wrapped envelope's created_at) match what Go reads; non-ASCII text is
// byte-exact; after an erasure, the example accepts the erasure notice and
// erases its copy of the event it names.
func TestPythonConsumerExample(t *testing.T) {
	py := pythonExample(t)
	dbURL := testenv.Postgres(t)
	brokers := testenv.KafkaForTest(t)
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := func(name string) string { return "py." + suffix + "." + name }
	entries, signWith := catalogueProviders(t, topic)
	cfgPath := writeConfigYAML(t, "kafka:\n  partitions: 2\nrelay:\n  slot: py_"+suffix+"\n"+demoProvider+"    topic: "+topic("demo")+"\n"+entries)
	cfg, err := config.Load(cfgPath, false, func(k string) string { return map[string]string{"E2E_SECRET": e2eSecret}[k] })
	if err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, dbURL, cfgPath)
	startLong(t, dbURL, "relay", "--config", cfgPath)

	const (
		nanoTime = "2026-11-20T10:15:41.314187999Z"
		text     = "naïve café — 東京 🚀 \u00e9\u0301"
	)
	demo1 := keyCase{body: fmt.Sprintf(`{"id":"evt_py_1","type":"payment.succeeded","created_at":%q,"data":{"payment_id":"pay_py","text":%q}}`, nanoTime, text)}
	demo2 := keyCase{body: `{"id":"evt_py_2","type":"payment.refunded","created_at":"2026-11-20T10:15:42Z","data":{"payment_id":"pay_py"}}`}
	for _, c := range []keyCase{demo1, demo2, demo1} { // the third: a duplicate delivery, 204 and no record
		deliverSigned(t, srv.public, cfg.Providers["demo"], "demo", e2eSecret, "application/json", c)
	}
	// One genuine delivery of every catalogue kind.
	want := map[string]int{"demo": 2}
	for name, c := range keyCases(strconv.FormatInt(time.Now().UnixMilli(), 10)) {
		deliverSigned(t, srv.public, cfg.Providers[name], name, signWith[name], contentType(name), c)
		want[name] = 1
	}
	// What Go reads: the relay's records (and no record for the duplicate).
	goRecs := map[string]*kgo.Record{}
	var topics, args []string
	total := 0
	for name, n := range want {
		topics = append(topics, topic(name))
		args = append(args, "--topic", topic(name))
		total += n
	}
	// The relay publishes at least once (a row written while it starts can
	// come through both its snapshot and its stream), so rows are counted
	// by outbox id: a duplicate delivery would have made a second row.
	perTopic := map[string]map[string]bool{}
	for _, r := range readTopics(t, brokers, topics, total) {
		h := schemas.Headers(r)
		if perTopic[r.Topic] == nil {
			perTopic[r.Topic] = map[string]bool{}
		}
		perTopic[r.Topic][h[schemas.HeaderOutboxID]] = true
		goRecs[h[schemas.HeaderID]] = r
	}
	for name, n := range want {
		if got := len(perTopic[topic(name)]); got != n {
			t.Fatalf("%s: %d outbox rows on the topic, want %d (a duplicate delivery must make none)", name, got, n)
		}
	}
	// The relay delivers at least once: the same record again.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	again := *goRecs["evt_py_2"]
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: again.Topic, Key: again.Key, Value: again.Value, Headers: again.Headers}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	root, _ := filepath.Abs("../..")
	cmd := exec.Command(py, append([]string{filepath.Join(root, "examples", "python", "consume.py"), "--bootstrap-servers", strings.Join(brokers, ","),
		"--idle-timeout", "3"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	t.Logf("consume.py stderr: %s", stderr.String())
	if runErr != nil {
		t.Fatalf("consume.py: %v\nstdout: %s", runErr, stdout.String())
	}
	var events, dups []string
	got := map[string]pyLine{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l pyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		switch {
		case l.Rejected != nil:
			t.Errorf("consume.py rejected %s: %s", l.Rejected.Topic, l.Rejected.Error)
		case l.Duplicate != nil:
			dups = append(dups, l.Duplicate.ID)
		case l.Event != nil:
			events = append(events, l.Event.ID)
			got[l.Event.ID] = l
		}
	}
	var wantIDs []string
	for id := range goRecs {
		wantIDs = append(wantIDs, id)
	}
	slices.Sort(events)
	slices.Sort(wantIDs)
	if !slices.Equal(events, wantIDs) {
		t.Fatalf("consume.py accepted %d events %v,\nthe relay wrote %d: %v", len(events), events, len(wantIDs), wantIDs)
	}
	// The record produced again is a duplicate; so is any record the relay
	// itself sent twice. Each duplicate is of an event already accepted.
	if !slices.Contains(dups, "evt_py_2") {
		t.Errorf("consume.py reported duplicates %v, want evt_py_2 among them (the record delivered twice)", dups)
	}
	for _, id := range dups {
		if _, ok := got[id]; !ok {
			t.Errorf("consume.py reported %s as a duplicate of an event it never accepted", id)
		}
	}
	for id, l := range got {
		r, h := goRecs[id], schemas.Headers(goRecs[id])
		e := l.Event
		if e.Key != string(r.Key) || e.Partitionkey != string(r.Key) || e.OutboxID != h[schemas.HeaderOutboxID] ||
			e.Time != h[schemas.HeaderTime] || e.Type != h[schemas.HeaderType] || e.Source != h[schemas.HeaderSource] {
			t.Errorf("%s: Python read key %q (partitionkey %q) outbox %q time %q type %q source %q; Go read %q %q %q %q %q",
				id, e.Key, e.Partitionkey, e.OutboxID, e.Time, e.Type, e.Source, r.Key, h[schemas.HeaderOutboxID], h[schemas.HeaderTime], h[schemas.HeaderType], h[schemas.HeaderSource])
		}
	}
	if e := got["evt_py_1"].Event; e.Time != nanoTime || e.Key != "pay_py" || e.Data["data"].(map[string]any)["text"] != text {
		t.Errorf("evt_py_1: time %q key %q data %v; want %s, pay_py and the text byte for byte", e.Time, e.Key, e.Data, nanoTime)
	}
	if e := got["evt_key_stripe"].Event; e.Time != "2025-11-01T12:26:40Z" {
		t.Errorf("stripe ce_time %q, want 2025-11-01T12:26:40Z (created 1762000000)", e.Time)
	}
	if e := got["mg-key-1"].Event; e.Time != "2018-03-19T15:11:02.908181Z" {
		t.Errorf("mailgun ce_time %q, want 2018-03-19T15:11:02.908181Z (timestamp 1521472262.908181)", e.Time)
	}
	if e := got["1:0f7a1b9e-key"].Event; e.Time == "" || e.Time != e.Data["created_at"] || e.Key != "octo/key" {
		t.Errorf("github: ce_time %q, the wrapped envelope's created_at %v, key %q", e.Time, e.Data["created_at"], e.Key)
	}

	// An erasure of evt_py_1: the relay publishes its notice on the demo
	// topic; the example, reading the topic again, accepts the notice
	// against erasure-notice.schema.json and erases its copy of the event.
	if out, err := gatehouse(t, dbURL, "erase", "--config", cfgPath, "--provider", "demo", "--event-id", "evt_py_1").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "1 notice(s)") {
		t.Fatalf("erase: %v %s", err, out)
	}
	readTopics(t, brokers, []string{topic("demo")}, want["demo"]+1)
	cmd = exec.Command(py, filepath.Join(root, "examples", "python", "consume.py"), "--bootstrap-servers", strings.Join(brokers, ","),
		"--idle-timeout", "3", "--topic", topic("demo"))
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("consume.py after the erasure: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var erasures []pyLine
	sc = bufio.NewScanner(&stdout)
	for sc.Scan() {
		var l pyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		if l.Erasure != nil {
			erasures = append(erasures, l)
		}
	}
	if len(erasures) != 1 || !slices.Equal(erasures[0].Erasure.EventIDs, []string{"evt_py_1"}) || !slices.Equal(erasures[0].Erasure.Erased, []string{"evt_py_1"}) ||
		erasures[0].Erasure.ID != schemas.ErasureNoticeID(erasures[0].Erasure.ErasureID, "evt_py_1") {
		t.Errorf("consume.py's erasures after the erasure of evt_py_1: %+v\n%s", erasures, stdout.String())
	}
}

// readTopics reads topics from the start until records of n distinct
// outbox rows arrived (or a minute passed), then two seconds more for any
// extra record.
func readTopics(t *testing.T, brokers, topics []string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []*kgo.Record
	rows := map[string]bool{}
	for len(rows) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			rows[schemas.Headers(r)[schemas.HeaderOutboxID]] = true
		})
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer pcancel()
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	return out
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/demoapi"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestEraseEndToEnd proves an erasure end to end through the real
// binaries, in both relay modes: serve, relay and consume (the demo API
// answering its fetches, so projections exist) process events holding an
// e-mail address; the relay is stopped, more events with the address are
// recorded, `gatehouse erase --path data.email --value <address>` runs,
// and the relay starts again. Then no table of the database holds the
// address (every table and partition, read as text), the projection of the
// erased events' object is gone and not recreated, no log line any process
// wrote after the erasure holds it, no Kafka record published after the
// erasure holds it (key, headers, value), and one erasure notice per erased
// event is on the topic, keyed like the event, which the consumers skipped
// and `gatehouse tail` prints like any record.
//
// Two forward destinations (the team's services, verifying every delivery
// with the official Standard Webhooks library) put the address in the
// tables an erasure must also reach: one takes every event through a
// transform that copies the address into the body it sends
// (forward_deliveries), the other refuses the event evt_er_dead with an
// answer quoting the address (its last_error, and the replays row of its
// replay before the erasure; its failure issue keeps only the status).
// After the erasure both destinations receive one signed gatehouse.erasure
// notice per erased event, and no table holds the address. A forced replay
// of an erased event then publishes its marker keyed by its object, with
// its ce_time, in its object's partition.
func TestEraseEndToEnd(t *testing.T) {
	brokers := testenv.KafkaForTest(t)
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	api := httptest.NewServer(demoapi.Handler(nil))
	defer api.Close()
	for _, mode := range []string{"replication", "poll"} {
		t.Run(mode, func(t *testing.T) { eraseEndToEnd(t, mode, brokers, api.URL) })
	}
}

func eraseEndToEnd(t *testing.T, mode string, brokers []string, apiURL string) {
	const email = "zoe.erasable@example.org"
	ctx := context.Background()
	shaper, refuser := newEraseTeam(t, "", ""), newEraseTeam(t, `"pay_dead"`, email)
	dbURL := testenv.Postgres(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	topic := "e2e.erase." + mode + "." + suffix
	slot := "erase_" + mode[:4] + "_" + suffix[len(suffix)-9:]
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`kafka:
  partitions: 2
relay:
  mode: %s
  slot: %s
consumers:
  group: erase-%s
  retry_delays: [200ms]
`+demoProvider+`    topic: %s
    api_url: %s
    forward:
      - url: %s
        secret: %s
        transform: "function handler(w) { w.payload = {to: w.payload.data.event.data.email || null}; return w; }"
      - url: %s
        secret: %s
`, mode, slot, suffix, topic, apiURL, shaper.url, eraseTeamSecret, refuser.url, eraseTeamSecret))
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if mode == "replication" {
		t.Cleanup(func() { _, _ = conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot) })
	}
	srv := startServe(t, dbURL, cfgPath)
	rel1, _ := startLong(t, dbURL, "relay", "--config", cfgPath)
	cons, consAdmin := startLong(t, dbURL, "consume", "--config", cfgPath)
	event := func(id, payment, email string) {
		t.Helper()
		extra := ""
		if email != "" {
			extra = `,"email":"` + email + `"`
		}
		postSigned(t, srv.public, `{"id":"`+id+`","type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"`+payment+`"`+extra+`}}`)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nserve:\n%s\nconsume:\n%s", what, srv.stderr, cons.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	event("evt_keep", "pay_keep", "")
	event("evt_er_1", "pay_er", email)
	event("evt_er_2", "pay_er", email)
	event("evt_er_dead", "pay_dead", email) // the refusing destination answers 422 quoting the address
	for _, id := range []string{"evt_keep", "evt_er_1", "evt_er_2"} {
		waitFor(id+" processed", func() bool { return schemas.Final(inboxState(t, dbURL, id)) }) // pay_er's second event: ignored_stale when fetched in one batch
	}
	waitFor("evt_er_dead dead", func() bool { return inboxState(t, dbURL, "evt_er_dead") == schemas.StateDead })
	if out, err := gatehouse(t, dbURL, "replay", "--config", cfgPath, "--provider", "demo", "--event-id", "evt_er_dead").CombinedOutput(); err != nil {
		t.Fatalf("replay evt_er_dead: %v %s", err, out)
	}
	waitFor("evt_er_dead dead again", func() bool {
		return inboxState(t, dbURL, "evt_er_dead") == schemas.StateDead && refuser.refused.Load() >= 2
	})
	// Before the erasure the address is in the transformed bodies, the
	// dead event's error and its replay's row; never in its issue.
	for _, table := range []string{"forward_deliveries", "replays", "inbox"} {
		if n := rowsHolding(t, conn, table, email); n == 0 {
			t.Fatalf("%s holds no copy of the address before the erasure: the test would prove nothing", table)
		}
	}
	if n := rowsHolding(t, conn, "failure_issues", email); n != 0 ||
		count(t, conn, `SELECT count(*) FROM failure_issues WHERE message LIKE '%status 422%'`) != 1 {
		t.Fatalf("the refused event's failure issue: %d hold the address, want none and one naming status 422", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM provider_objects WHERE object_id IN ('pay_keep', 'pay_er')`); n != 2 {
		t.Fatalf("%d projections before the erasure, want 2", n)
	}

	// The relay stops; two more events with the address are recorded and
	// wait in the outbox when the erasure runs.
	stopGracefully(t, rel1, 30*time.Second)
	event("evt_er_3", "pay_er", email)
	event("evt_er_4", "pay_er", email)
	ends := endOffsets(t, brokers, topic)
	okBefore := outcomeRecords(t, consAdmin, topic, "ok")
	serveFrom, consFrom := len(srv.stderr.String()), len(cons.stderr.String())
	out, err := gatehouse(t, dbURL, "erase", "--config", cfgPath, "--provider", "demo", "--path", "data.email", "--value", email, "--reason", "e2e").CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": 5 event(s), 6 outbox row(s)") || !strings.Contains(string(out), ", 5 notice(s);") {
		t.Fatalf("erase: %v %s", err, out)
	}
	erasureID := regexp.MustCompile(`audit id (\d+)`).FindStringSubmatch(string(out))
	rel2, _ := startLong(t, dbURL, "relay", "--config", cfgPath)

	// After the erasure: the two erased events still to publish (their
	// value the marker) and five notices reach the topic and the
	// consumers, which skip the events and send the notices on to both
	// destinations.
	after := map[string]*kgo.Record{} // ce_id → record published after the erasure
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: ends}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var afterRecs []*kgo.Record
	waitFor("7 records after the erasure", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			afterRecs = append(afterRecs, r)
			after[schemas.Headers(r)[schemas.HeaderID]] = r
		})
		return len(after) >= 7
	})

	notices := 0
	for _, r := range afterRecs {
		h := schemas.Headers(r)
		var all bytes.Buffer
		all.Write(r.Key)
		all.Write(r.Value)
		for _, hv := range r.Headers {
			all.WriteString(hv.Key + "=" + string(hv.Value))
		}
		if strings.Contains(all.String(), email) {
			t.Errorf("record %s published after the erasure holds the address: %s", h[schemas.HeaderID], all.String())
		}
		switch h[schemas.HeaderType] {
		case schemas.ErasureNoticeType:
			notices++
			var n schemas.ErasureNotice
			err := json.Unmarshal(r.Value, &n)
			wantKey := "pay_er"
			if len(n.EventIDs) == 1 && n.EventIDs[0] == "evt_er_dead" {
				wantKey = "pay_dead"
			}
			if err != nil || string(r.Key) != wantKey || len(n.EventIDs) != 1 ||
				h[schemas.HeaderID] != schemas.ErasureNoticeID(n.ErasureID, n.EventIDs[0]) || erasureID == nil || strconv.FormatInt(n.ErasureID, 10) != erasureID[1] {
				t.Errorf("notice key %q headers %v value %s (%v)", r.Key, h, r.Value, err)
			}
		default:
			if _, ok := schemas.ErasedPayload(r.Value); !ok {
				t.Errorf("event record %s published after the erasure holds %s, want the erasure marker", h[schemas.HeaderID], r.Value)
			}
		}
	}
	erased := []string{"evt_er_1", "evt_er_2", "evt_er_3", "evt_er_4", "evt_er_dead"}
	for _, id := range erased {
		if after[schemas.ErasureNoticeID(atoiOr0(erasureID), id)] == nil {
			t.Errorf("no erasure notice of %s on the topic", id)
		}
	}
	if notices != 5 {
		t.Errorf("%d notices after the erasure, want 5", notices)
	}
	if t.Failed() {
		t.FailNow()
	}
	// The notices reach both destinations, signed (outcome ok); the two
	// erased events' records are duplicates: the erasure made their rows
	// final (skipped).
	for _, team := range []*eraseTeam{shaper, refuser} {
		for _, id := range erased {
			wid := "demo:" + schemas.ErasureNoticeID(atoiOr0(erasureID), id)
			waitFor("the notice "+wid+" at "+team.url, func() bool { return team.received(wid) != nil })
			var d struct {
				Type string `json:"type"`
				Data struct {
					Event schemas.ErasureNotice `json:"event"`
				} `json:"data"`
			}
			if b := team.received(wid); json.Unmarshal(b, &d) != nil || d.Type != schemas.ErasureNoticeType || len(d.Data.Event.EventIDs) != 1 ||
				d.Data.Event.EventIDs[0] != id || strings.Contains(string(b), email) {
				t.Errorf("notice delivered to %s: %s", team.url, b)
			}
		}
		if n := team.invalid.Load(); n != 0 {
			t.Errorf("%s: %d deliveries failed verification", team.url, n)
		}
	}
	waitFor("the consumers to send 5 notices and find 2 erased events final", func() bool {
		return outcomeRecords(t, consAdmin, topic, "ok") >= okBefore+5 && outcomeRecords(t, consAdmin, topic, "duplicate") >= 2
	})
	for _, id := range []string{"evt_er_3", "evt_er_4"} {
		if st := inboxState(t, dbURL, id); st != "skipped" {
			t.Errorf("%s is %q after the erasure, want skipped (an erased event is not processed)", id, st)
		}
	}

	// No table holds the address: every table and partition of the
	// database, each row read as text.
	tables := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables[name] = true
	}
	rows.Close()
	for _, must := range []string{"inbox", "outbox", "provider_objects", "provider_object_changes", "erasures", "outbox_erasures", "processed_events",
		"forward_deliveries", "failure_issues", "failure_issue_events", "replays"} {
		if !tables[must] {
			t.Errorf("table %s not found: the search below would miss it", must)
		}
	}
	for name := range tables {
		if n := rowsHolding(t, conn, name, email); n != 0 {
			t.Errorf("table %s: %d row(s) hold the erased address", name, n)
		}
	}
	if n := count(t, conn, `SELECT count(*) FROM provider_objects WHERE object_id = 'pay_er'`); n != 0 {
		t.Errorf("the erased events' projection pay_er is there after the erasure (%d)", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM provider_objects WHERE object_id = 'pay_keep'`); n != 1 {
		t.Errorf("the projection pay_keep, of an event not erased, is gone")
	}

	// `gatehouse tail` prints the notices like any record.
	total := 0
	for _, o := range ends {
		total += int(o.EpochOffset().Offset)
	}
	total += len(afterRecs)
	tail, err := gatehouse(t, dbURL, "tail", "--config", cfgPath, "--topic", topic, "--from-beginning", "--count", strconv.Itoa(total)).Output()
	if err != nil {
		t.Fatalf("tail: %v", err)
	}
	printed, kept := 0, map[string]bool{} // kept: the events whose records hold the address
	sc := bufio.NewScanner(bytes.NewReader(tail))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l tailLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Headers[schemas.HeaderType] == schemas.ErasureNoticeType && (l.Key == "pay_er" || l.Key == "pay_dead") {
			printed++
		}
		if bytes.Contains(sc.Bytes(), []byte(email)) {
			// A record published before the erasure: it stays until the
			// topic's retention. The relay publishes at least once, so an
			// event may have more than one such record; events are counted.
			kept[l.Headers[schemas.HeaderID]] = true
		}
	}
	if len(kept) != 3 || !kept["evt_er_1"] || !kept["evt_er_2"] || !kept["evt_er_dead"] {
		t.Errorf("the records holding the address on the topic are of %v, want evt_er_1, evt_er_2 and evt_er_dead (published before the erasure)", kept)
	}
	t.Logf("%s: %d records before the erasure, %d after (%d notices); %d tables searched; tail printed %d notices",
		mode, total-len(afterRecs), len(afterRecs), notices, len(tables), printed)
	if printed != 5 {
		t.Errorf("tail printed %d notices, want 5:\n%s", printed, tail)
	}
	replayErased(t, dbURL, cfgPath, brokers, topic, afterRecs)

	// No log line written after the erasure holds the address.
	stopGracefully(t, rel2, 30*time.Second)
	stopGracefully(t, cons, 30*time.Second)
	stopGracefully(t, srv, 30*time.Second)
	for name, logs := range map[string]string{"erase": string(out), "serve": srv.stderr.String()[serveFrom:],
		"consume": cons.stderr.String()[consFrom:], "relay": rel2.stderr.String()} {
		if strings.Contains(logs, email) {
			t.Errorf("%s logged the erased address after the erasure:\n%s", name, logs)
		}
	}
}

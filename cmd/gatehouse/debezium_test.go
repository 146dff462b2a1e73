package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// debeziumConnector is the connector configuration docs/RELAY.md's "Using
// Debezium instead of gatehouse relay" documents, for the database of
// dbURL, routing to "<prefix><outbox.topic>".
func debeziumConnector(t *testing.T, dbURL, slot, prefix string) map[string]string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"name":                                    "gatehouse-outbox",
		"connector.class":                         "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                               "1",
		"plugin.name":                             "pgoutput",
		"database.hostname":                       cfg.Host,
		"database.port":                           strconv.Itoa(int(cfg.Port)),
		"database.user":                           cfg.User,
		"database.password":                       cfg.Password,
		"database.dbname":                         cfg.Database,
		"topic.prefix":                            "gatehouse",
		"table.include.list":                      "public.outbox",
		"slot.name":                               slot,
		"publication.name":                        slot,
		"publication.autocreate.mode":             "disabled", // created by the test: through the outbox's root
		"snapshot.mode":                           "no_data",
		"tombstones.on.delete":                    "false",
		"transforms":                              "outbox,contenttype",
		"extended.headers.enabled":                "false", // no __debezium.context.* headers
		"transforms.outbox.type":                  "io.debezium.transforms.outbox.EventRouter",
		"transforms.outbox.table.field.event.id":  "id",
		"transforms.outbox.table.field.event.key": "aggregateid",
		"transforms.outbox.table.field.event.payload": "payload",
		"transforms.outbox.route.by.field":            "topic",
		"transforms.outbox.route.topic.replacement":   prefix + "${routedByValue}",
		"transforms.outbox.table.fields.additional.placement": "event_id:header:ce_id,type:header:ce_type," +
			"aggregatetype:header:gatehouse_provider,id:header:gatehouse_outbox_id,event_time:header:ce_time",
		"transforms.outbox.table.op.invalid.behavior": "warn",
		"transforms.contenttype.type":                 "org.apache.kafka.connect.transforms.InsertHeader",
		"transforms.contenttype.header":               "content-type",
		"transforms.contenttype.value.literal":        "application/json",
		// The router's topics are created by the worker (brokers here, as in
		// most production clusters, do not auto-create topics).
		"topic.creation.default.partitions":         "2",
		"topic.creation.default.replication.factor": "1",
	}
}

// TestDebeziumOutboxRouterMatchesRelay runs real Debezium (Kafka Connect,
// the PostgreSQL connector and its Outbox Event Router) beside `gatehouse
// relay` on the database the real receiver writes, and compares what both
// publish for the same outbox rows: the same records (one per verified
// event; the outbox is an append-only log), the same key and
// value bytes, and the same ce_id, ce_type, gatehouse_provider and
// gatehouse_outbox_id headers, and content-type (added by Kafka's
// InsertHeader); and ce_time is byte for byte the same text (outbox.event_time
// is the provider's text, which Debezium passes on as a string header, with
// nanoseconds: `gatehouse send` writes created_at with them). ce_source and ce_specversion are
// gatehouse's alone (InsertHeader parses the literal "1.0" as a number and
// writes "1"), and Debezium adds an "id" header (docs/RELAY.md says so).
func TestDebeziumOutboxRouterMatchesRelay(t *testing.T) {
	dbURL := testenv.PostgresUnmigrated(t)
	brokers := testenv.KafkaForTest(t)
	topic := "dbz.cmp." + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfgPath := writeConfigYAML(t, "kafka:\n  partitions: 2\n"+demoProvider+"    topic: "+topic+"\n")
	t.Setenv("GATEHOUSE_KAFKA_BROKERS", strings.Join(brokers, ","))
	if out, err := gatehouse(t, dbURL, "migrate", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v %s", err, out)
	}
	slot := "dbz_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	// The outbox is partitioned: Debezium reads inserts as "public.outbox"
	// only through a publication that publishes via the root (docs/RELAY.md
	// "Using Debezium instead of gatehouse relay").
	pub, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Exec(context.Background(), `CREATE PUBLICATION `+slot+` FOR TABLE outbox WITH (publish = 'insert', publish_via_partition_root = true)`); err != nil {
		t.Fatal(err)
	}
	pub.Close(context.Background())
	testenv.StartConnect(t, brokers, debeziumConnector(t, dbURL, slot, "debezium."))
	// The connector reports RUNNING before its task has created the slot;
	// rows written before that are not Debezium's to see.
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var active bool
		if conn.QueryRow(context.Background(), `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&active) == nil && active {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Debezium's slot %s never became active", slot)
		}
	}
	srv := startServe(t, dbURL, cfgPath)
	startLong(t, dbURL, "relay", "--config", cfgPath)

	const n = 12
	var ids []string
	for i := range n {
		id := fmt.Sprintf("evt_dbz_%02d", i)
		obj := fmt.Sprintf("pay_%d", i%4)
		for range 1 + i%2 { // every other event delivered twice: one outbox row still
			out, err := gatehouse(t, dbURL, "send", "--config", cfgPath, "--url", srv.public, "--id", id, "--object", obj).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "204") {
				t.Fatalf("send %s: %v %s", id, err, out)
			}
		}
		ids = append(ids, id)
	}
	relayRecs := byEventID(t, readAll(t, brokers, topic, n))
	dbzRecs := byEventID(t, readAll(t, brokers, "debezium."+topic, n))
	if len(relayRecs) != n || len(dbzRecs) != n {
		t.Fatalf("relay published %d events, Debezium %d; want %d each", len(relayRecs), len(dbzRecs), n)
	}
	// Exactly one Debezium record per event: the relay writes nothing back
	// to the outbox (a log), so there is nothing else for the router to see.
	time.Sleep(2 * time.Second)
	if extra := readAll(t, brokers, "debezium."+topic, n); len(extra) != n {
		t.Fatalf("Debezium topic holds %d records for %d events", len(extra), n)
	}
	t.Logf("relay:    key=%s value=%s headers=%v", relayRecs[ids[0]].Key, relayRecs[ids[0]].Value, schemas.Headers(relayRecs[ids[0]]))
	t.Logf("debezium: key=%s value=%s headers=%v", dbzRecs[ids[0]].Key, dbzRecs[ids[0]].Value, schemas.Headers(dbzRecs[ids[0]]))
	for _, id := range ids {
		r, d := relayRecs[id], dbzRecs[id]
		if string(r.Key) != string(d.Key) {
			t.Errorf("%s: key relay %q, debezium %q", id, r.Key, d.Key)
		}
		if string(r.Value) != string(d.Value) {
			t.Errorf("%s: value differs\nrelay:    %s\ndebezium: %s", id, r.Value, d.Value)
		}
		rh, dh := schemas.Headers(r), schemas.Headers(d)
		for _, h := range []string{schemas.HeaderID, schemas.HeaderType, schemas.HeaderProvider, schemas.HeaderOutboxID,
			schemas.HeaderContentType} {
			if rh[h] != dh[h] {
				t.Errorf("%s: header %s relay %q, debezium %q", id, h, rh[h], dh[h])
			}
		}
		var created struct {
			CreatedAt string `json:"created_at"`
		}
		_ = json.Unmarshal(r.Value, &created)
		if rh[schemas.HeaderTime] == "" || rh[schemas.HeaderTime] != dh[schemas.HeaderTime] || rh[schemas.HeaderTime] != created.CreatedAt {
			t.Errorf("%s: ce_time relay %q, debezium %q; the envelope's created_at %q", id, rh[schemas.HeaderTime], dh[schemas.HeaderTime], created.CreatedAt)
		}
	}
	resp, err := http.Get(srv.admin + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("serve not ready after the comparison: %v", err)
	}
	resp.Body.Close()
}

func byEventID(t *testing.T, recs []*kgo.Record) map[string]*kgo.Record {
	t.Helper()
	out := map[string]*kgo.Record{}
	for _, r := range recs {
		id := schemas.Headers(r)[schemas.HeaderID]
		if id == "" {
			t.Fatalf("record at %s/%d@%d has no %s header", r.Topic, r.Partition, r.Offset, schemas.HeaderID)
		}
		if _, dup := out[id]; !dup {
			out[id] = r
		}
	}
	return out
}

package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/internal/kafka"
	"github.com/gatehouse/gatehouse/internal/storage"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/migrations"
	"github.com/gatehouse/gatehouse/schemas"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// op is an in-test OpenID Provider's discovery document and JWKS (the
// doctor only reads these two documents).
func op(t *testing.T) string {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL + "/", "jwks_uri": srv.URL + "/jwks"})
		case "/jwks":
			_, _ = w.Write([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k1"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

type deployment struct {
	dbURL   string
	brokers []string
	issuer  string
	keyFile string
	admin   string
	topic   string
	extra   string
}

func (d deployment) yaml() string {
	return fmt.Sprintf(`admin_listen: %q
database_url: %q
providers:
  demo:
    scheme: reference
    timestamp_header: X-Timestamp
    signature_header: X-Signature
    secrets: [{id: a, value: "env:DEMO_SECRET"}]
    topic: %s
kafka:
  brokers: [%s]
auth:
  issuer: %q
  client_id: gatehouse
  redirect_url: https://gatehouse.example.com/callback
  encryption_keys: [{id: k, value: "file:%s"}]
%s`, d.admin, d.dbURL, d.topic, strings.Join(d.brokers, ", "), d.issuer, d.keyFile, d.extra)
}

func run(t *testing.T, d deployment, o Options) (map[string]Check, string) {
	t.Helper()
	o.Raw, o.Path = []byte(d.yaml()), "gatehouse.yaml"
	if o.Getenv == nil {
		o.Getenv = func(name string) string {
			if name == "DEMO_SECRET" {
				return "whsec_demo"
			}
			return ""
		}
	}
	checks := Run(context.Background(), o)
	var b bytes.Buffer
	Write(&b, checks)
	byName := map[string]Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	return byName, b.String()
}

func wantOK(t *testing.T, checks map[string]Check, out string, names ...string) {
	t.Helper()
	for _, n := range names {
		if c, ok := checks[n]; !ok || !c.OK {
			t.Errorf("%q: %+v (found %v)\n%s", n, c, ok, out)
		}
	}
}

func wantFail(t *testing.T, checks map[string]Check, out, name, fix string) {
	t.Helper()
	c, ok := checks[name]
	if !ok || c.OK || !strings.Contains(c.Fix, fix) {
		t.Errorf("%q should fail with a fix naming %q: %+v (found %v)\n%s", name, fix, c, ok, out)
	}
	if !strings.Contains(out, "✗ "+name) || !strings.Contains(out, "    fix: ") {
		t.Errorf("%q: not printed as ✗ with its fix:\n%s", name, out)
	}
}

// TestDoctor runs the doctor against a real PostgreSQL and Kafka: a
// deployment wired right passes every check, then each way of wiring it
// wrong that can be provoked fails its check with the fix.
func TestDoctor(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.Postgres(t)
	brokers := testenv.KafkaForTest(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("doctor.%d", time.Now().UnixNano())
	d := deployment{dbURL: dbURL, brokers: brokers, issuer: op(t), keyFile: keyFile, admin: "127.0.0.1:9090", topic: topic}

	// Before anything ran: no slot, no topics (the migrations created
	// the first partitions).
	checks, out := run(t, d, Options{})
	wantOK(t, checks, out, "configuration loads", "secrets resolvable", "database reachable", "wal_level is logical",
		"migrations current", "clock in step with the database", "kafka brokers reachable", "admin listener not public",
		"OpenID Provider "+d.issuer+" (auth.issuer) discovery and JWKS reachable")
	wantFail(t, checks, out, "replication slot and publication exist", "start gatehouse relay")
	wantFail(t, checks, out, "kafka topics exist", "gatehouse consume")

	// What relay, serve and consume create at start.
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`CREATE PUBLICATION gatehouse_outbox FOR TABLE outbox WITH (publish = 'insert', publish_via_partition_root = true)`,
		`SELECT pg_create_logical_replication_slot('gatehouse_outbox', 'pgoutput')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m, err := storage.New(storage.Config{Pool: pool, Stage: "ingest", Ahead: 3, Partitioned: []storage.Table{
		{Name: "inbox", Retention: 720 * time.Hour}, {Name: "dedupe_keys", Retention: 744 * time.Hour},
		{Name: "outbox", Retention: 24 * time.Hour, Interval: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	opts, _ := kafka.Options(kafka.ClientConfig{Brokers: brokers})
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	all := []string{topic, schemas.DeadLetterTopic(topic)}
	for n := 1; n <= 3; n++ {
		all = append(all, schemas.RetryTopic(topic, n))
	}
	if _, err := kafka.EnsureTopics(ctx, adm, nil, kafka.TopicSpec{Partitions: 1}, all...); err != nil {
		t.Fatal(err)
	}
	checks, out = run(t, d, Options{})
	for name, c := range checks {
		if !c.OK || c.Skipped {
			t.Errorf("a deployment wired right fails or skips %q: %+v\n%s", name, c, out)
		}
	}
	if len(checks) < 14 {
		t.Errorf("only %d checks:\n%s", len(checks), out)
	}
	t.Logf("healthy:\n%s", out)

	// Each way of wiring it wrong.
	t.Run("wrong database URL", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		bad := d
		bad.dbURL = "postgres://gatehouse:sekret-pw@" + addr + "/gatehouse?sslmode=disable"
		checks, out := run(t, bad, Options{Timeout: 2 * time.Second})
		wantFail(t, checks, out, "database reachable", "database_url")
		if strings.Contains(out, "sekret-pw") {
			t.Errorf("the database password is printed:\n%s", out)
		}
		if _, ok := checks["wal_level is logical"]; ok {
			t.Error("checks of an unreachable database were run")
		}
	})
	// A password holding '/', '#', '?' or '@' unencoded breaks the URL
	// (or makes it parse as another host); the doctor still never prints it.
	t.Run("database URL that does not parse", func(t *testing.T) {
		for _, pw := range []string{"sek/ret-pw", "sek#ret-pw", "sek?ret-pw", "1234#ret-pw", "1234/ret-pw"} {
			bad := d
			bad.dbURL = "postgres://gatehouse:" + pw + "@127.0.0.1:1/gatehouse?sslmode=disable"
			checks, out := run(t, bad, Options{Timeout: 2 * time.Second})
			if c := checks["database reachable"]; c.OK {
				t.Errorf("%s: database reachable", pw)
			}
			if strings.Contains(out, "ret-pw") {
				t.Errorf("the database password %q is printed:\n%s", pw, out)
			}
		}
	})
	t.Run("unresolvable secrets", func(t *testing.T) {
		bad := d
		bad.keyFile = filepath.Join(t.TempDir(), "missing")
		checks, out := run(t, bad, Options{Getenv: func(string) string { return "" }})
		if _, ok := checks["secrets resolvable"]; ok {
			t.Errorf("the missing secrets are counted twice, once in a summary:\n%s", out)
		}
		wantFail(t, checks, out, "secret providers.demo.secrets[0].value (line 8) resolvable", "DEMO_SECRET")
		wantFail(t, checks, out, "secret auth.encryption_keys[0].value (line 16) resolvable", bad.keyFile)
		wantOK(t, checks, out, "configuration loads", "database reachable", "kafka topics exist")
	})
	t.Run("admin listener on every interface", func(t *testing.T) {
		public := func() ([]net.Addr, error) {
			return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1")}, &net.IPNet{IP: net.ParseIP("203.0.113.7")}}, nil
		}
		pod := func() ([]net.Addr, error) {
			return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1")}, &net.IPNet{IP: net.ParseIP("10.42.0.17")}}, nil
		}
		bad := d
		for _, admin := range []string{"0.0.0.0:9090", ":9090", "[::]:9090"} {
			bad.admin = admin
			checks, out := run(t, bad, Options{InterfaceAddrs: public})
			wantFail(t, checks, out, "admin listener not public", "127.0.0.1:9090")
			checks, out = run(t, bad, Options{InterfaceAddrs: pod})
			wantOK(t, checks, out, "admin listener not public")
		}
		bad.admin = "203.0.113.7:9090"
		checks, out := run(t, bad, Options{InterfaceAddrs: pod})
		wantFail(t, checks, out, "admin listener not public", "admin_listen")
	})
	t.Run("kafka unreachable", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		bad := d
		bad.brokers = []string{addr}
		checks, out := run(t, bad, Options{Timeout: 2 * time.Second})
		wantFail(t, checks, out, "kafka brokers reachable", "kafka.brokers")
		if c := checks["kafka topics exist"]; !c.Skipped {
			t.Errorf("topics on unreachable brokers not shown skipped: %+v", c)
		}
	})
	t.Run("missing topic", func(t *testing.T) {
		bad := d
		bad.topic = topic + ".other"
		checks, out := run(t, bad, Options{})
		wantFail(t, checks, out, "kafka topics exist", "gatehouse consume")
		if !strings.Contains(checks["kafka topics exist"].Detail, bad.topic+".dlq") {
			t.Errorf("the missing dead-letter topic is not named: %s", out)
		}
	})
	t.Run("clock skew", func(t *testing.T) {
		checks, out := run(t, d, Options{Now: func() time.Time { return time.Now().Add(5 * time.Second) }})
		wantFail(t, checks, out, "clock in step with the database", "NTP")
	})
	t.Run("OP unreachable or another issuer", func(t *testing.T) {
		bad := d
		bad.issuer = strings.TrimSuffix(d.issuer, "/")
		checks, out := run(t, bad, Options{})
		wantFail(t, checks, out, "OpenID Provider "+bad.issuer+" (auth.issuer) discovery and JWKS reachable", d.issuer)
		bad.issuer = "http://127.0.0.1:1/"
		checks, out = run(t, bad, Options{Timeout: 2 * time.Second})
		wantFail(t, checks, out, "OpenID Provider "+bad.issuer+" (auth.issuer) discovery and JWKS reachable", "reaches the OP")
	})
	t.Run("stray inactive slot", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `SELECT pg_create_logical_replication_slot('forgotten_debezium', 'pgoutput')`); err != nil {
			t.Fatal(err)
		}
		bad := d
		bad.extra = "relay:\n  mode: poll\n" // the relay's slot is not wanted either then
		checks, out := run(t, bad, Options{MaxSlotLag: 1})
		wantFail(t, checks, out, "no inactive replication slot retains WAL", "pg_drop_replication_slot")
		for _, s := range []string{"forgotten_debezium", "gatehouse_outbox"} {
			if !strings.Contains(checks["no inactive replication slot retains WAL"].Detail, s) {
				t.Errorf("slot %s not named:\n%s", s, out)
			}
		}
		if c := checks["wal_level is logical"]; !c.Skipped {
			t.Errorf("wal_level checked in poll mode, not skipped: %+v", c)
		}
		if _, err := pool.Exec(ctx, `SELECT pg_drop_replication_slot('forgotten_debezium')`); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing slot", func(t *testing.T) {
		if _, err := pool.Exec(ctx, `SELECT pg_drop_replication_slot('gatehouse_outbox')`); err != nil {
			t.Fatal(err)
		}
		checks, out := run(t, d, Options{})
		wantFail(t, checks, out, "replication slot and publication exist", "start gatehouse relay")
		if !strings.Contains(checks["replication slot and publication exist"].Detail, "slot gatehouse_outbox") {
			t.Errorf("the missing slot is not named:\n%s", out)
		}
	})
	t.Run("partitions not ahead", func(t *testing.T) {
		bad := d
		bad.extra = "storage:\n  partition_interval: 120h\n" // the inbox's partitions reach < 120h ahead
		checks, out := run(t, bad, Options{})
		wantFail(t, checks, out, "time partitions created ahead", "gatehouse serve")
	})
	t.Run("expired partition kept", func(t *testing.T) {
		// The outbox's oldest partition as a pass that stopped dropping
		// would leave it (its bounds as the maintenance reads them).
		if _, err := pool.Exec(ctx, `UPDATE storage_partitions SET ends = now() - interval '30 days' WHERE name = 'outbox_legacy'`); err != nil {
			t.Fatal(err)
		}
		checks, out := run(t, d, Options{})
		wantFail(t, checks, out, "retention passes dropping expired partitions", "storage maintenance")
	})
}

// TestDoctorPendingMigration: a database a migration behind fails
// "migrations current", naming the migration, and the probe applies
// nothing.
func TestDoctorPendingMigration(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.PostgresUnmigrated(t)
	// A new database whose version table goose created: the baseline is
	// pending (0.1.0 ships one migration).
	if conn, err := pgx.Connect(ctx, dbURL); err != nil {
		t.Fatal(err)
	} else {
		_, err := conn.Exec(ctx, `CREATE TABLE goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now());
			INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true)`)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	version := func() int64 {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var v int64
		if err := conn.QueryRow(ctx, `SELECT max(version_id) FROM goose_db_version`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	pending, err := PendingMigrations(ctx, dbURL)
	if err != nil || !strings.Contains(pending, "000") {
		t.Fatalf("pending = %q, %v", pending, err)
	}
	if after := version(); after != before {
		t.Fatalf("the probe applied migrations: version %d → %d", before, after)
	}
	raw := fmt.Sprintf("database_url: %q\nrelay: {mode: poll}\n", dbURL)
	checks := Run(ctx, Options{Raw: []byte(raw), Path: "g.yaml", Getenv: func(string) string { return "" }})
	var b bytes.Buffer
	Write(&b, checks)
	for _, c := range checks {
		if c.Name == "migrations current" {
			if c.OK || !strings.Contains(c.Fix, "gatehouse migrate") || !strings.Contains(c.Detail, "pending") {
				t.Errorf("%+v", c)
			}
			if err := migrations.Up(ctx, dbURL); err != nil {
				t.Fatal(err)
			}
			if p, err := PendingMigrations(ctx, dbURL); p != "" || err != nil {
				t.Errorf("after migrate: %q, %v", p, err)
			}
			return
		}
	}
	t.Fatalf("no migrations check:\n%s", b.String())
}

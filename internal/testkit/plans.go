package testkit

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PlanConn is a PostgreSQL connection whose statements, and the
// statements of the functions they call, report their executed plans
// (auto_explain sent to the client, as JSON with buffer counts): a test
// can check that a plan cached on empty tables stays an index lookup once
// they fill.
type PlanConn struct {
	Conn  *pgx.Conn
	mu    sync.Mutex
	plans []string
}

// NewPlanConn connects to dbURL with the session settings given and
// auto_explain loaded (the test's server runs as a superuser).
func NewPlanConn(t testing.TB, dbURL string, settings map[string]string) *PlanConn {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range settings {
		cfg.RuntimeParams[k] = v
	}
	pc := &PlanConn{}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "duration:") {
			pc.mu.Lock()
			pc.plans = append(pc.plans, n.Message)
			pc.mu.Unlock()
		}
	}
	if pc.Conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Conn.Close(ctx) })
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_analyze = on`,
		`SET auto_explain.log_buffers = on`, `SET auto_explain.log_timing = off`, `SET auto_explain.log_format = json`,
		`SET auto_explain.log_nested_statements = on`, `SET client_min_messages = log`} {
		if _, err := pc.Conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return pc
}

// Run runs fn and returns the plans of the statements it executed whose
// text holds match.
func (pc *PlanConn) Run(t testing.TB, match string, fn func(conn *pgx.Conn) error) []Plan {
	t.Helper()
	pc.mu.Lock()
	pc.plans = nil
	pc.mu.Unlock()
	if err := fn(pc.Conn); err != nil {
		t.Fatal(err)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var out []Plan
	for _, msg := range pc.plans {
		i := strings.Index(msg, "{")
		if i < 0 || !strings.Contains(msg, match) {
			continue
		}
		var doc struct {
			Text string `json:"Query Text"`
			Plan Plan   `json:"Plan"`
		}
		if err := json.Unmarshal([]byte(msg[i:]), &doc); err != nil {
			t.Fatalf("auto_explain output: %v", err)
		}
		if strings.Contains(doc.Text, match) {
			out = append(out, doc.Plan)
		}
	}
	return out
}

// Plan is one node of an executed plan.
type Plan struct {
	Type       string `json:"Node Type"`
	Relation   string `json:"Relation Name"`
	SharedHit  int64  `json:"Shared Hit Blocks"`
	SharedRead int64  `json:"Shared Read Blocks"`
	Plans      []Plan `json:"Plans"`
}

// Buffers is how many shared buffers the node and those below it hit or read.
func (p Plan) Buffers() int64 { return p.SharedHit + p.SharedRead }

// SeqScans are the relations the plan reads whole whose names start with
// one of prefixes.
func (p Plan) SeqScans(prefixes ...string) []string {
	var out []string
	if p.Type == "Seq Scan" {
		for _, pre := range prefixes {
			if strings.HasPrefix(p.Relation, pre) {
				out = append(out, p.Relation)
				break
			}
		}
	}
	for _, c := range p.Plans {
		out = append(out, c.SeqScans(prefixes...)...)
	}
	return out
}

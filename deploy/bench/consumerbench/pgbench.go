package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// pgbenchScript is the consumer's SQL per event, identical to what the
// consumer sends: the claim, then the effect (one statement each), for an
// event whose inbox row exists.
const pgbenchScript = `SELECT nextval('consumerbench_seq') AS id \gset
SELECT * FROM consumers_claim('pgb', 'pgb_' || :id);
SELECT consumers_apply('pgb', 'pgb_' || :id, 'payment.succeeded', 'pay_pgb_' || :id, 'payment', 1, '{"id":"pay","object":"payment","version":1,"status":"succeeded","amount":1999}');
`

// ceilingSQL runs pgbench with the consumer's statements at as many clients
// as the consumer processes events at once (partitions × key concurrency)
// and returns transactions (events) per second.
func (b *bench) ceilingSQL(ctx context.Context) (float64, error) {
	n := b.o.events * 4
	if _, err := b.pool.Exec(ctx, `CREATE SEQUENCE consumerbench_seq`); err != nil {
		return 0, fmt.Errorf("pgbench sequence: %w", err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
SELECT 'pgb', 'pgb_' || i, 'payment.succeeded', '{"id":"x"}', true, 'bench' FROM generate_series(1, $1::int) i`, n); err != nil {
		return 0, fmt.Errorf("pgbench rows: %w", err)
	}
	path, err := pgbenchPath()
	if err != nil {
		return 0, err
	}
	script := filepath.Join(b.pgDir, "consumer.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return 0, err
	}
	clients := b.o.partitions * b.o.keyConcurrency
	cmd := exec.CommandContext(ctx, path, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)),
		"-t", strconv.Itoa(b.o.events/clients), "-f", script, b.dbURL)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		return float64(b.o.events) / time.Since(start).Seconds(), nil
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func pgbenchPath() (string, error) {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		p := filepath.Join(string(regexp.MustCompile(`\s+$`).ReplaceAll(out, nil)), "pgbench")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(ms) > 0 {
		return ms[len(ms)-1], nil
	}
	return "", fmt.Errorf("pgbench not found (deploy/local/deps.sh installs postgresql-contrib)")
}

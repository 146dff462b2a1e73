package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// pgbenchScript is one consumer batch of :batch new events, with the
// consumer's own statements as consumers/store_batch.go calls them: one
// consumers_claim_many for the batch (provider, event id and the time the
// event was received, which prunes the claim to its inbox partition), then
// one transaction applying each event with consumers_apply (the consumer
// pipelines one statement per event; here one SELECT calls it per row).
// TestBenchSQLCallsProductionSignatures (benchenv) fails when a function
// called here takes another number of arguments in production.
const pgbenchScript = `SELECT nextval('consumerbench_seq') AS id \gset
SELECT count(*) FROM consumers_claim_many(array_fill('pgb'::text, ARRAY[(:batch)::int]),
  ARRAY(SELECT 'pgb_' || ((:id)::int * (:batch)::int + g) FROM generate_series(1, (:batch)::int) g), array_fill(now(), ARRAY[(:batch)::int]));
BEGIN;
SELECT count(consumers_apply('pgb', 'pgb_' || ((:id)::int * (:batch)::int + g), 'payment.succeeded', 'pay_pgb_' || ((:id)::int * (:batch)::int + g), 'payment', 1,
  '{"id":"pay","object":"payment","version":1,"status":"succeeded","amount":1999}', now())) FROM generate_series(1, (:batch)::int) g;
COMMIT;
`

// ceilingSQL runs pgbench with the consumer's batched statements (one
// client: one consumer applies one batch at a time) and returns events
// per second.
func (b *bench) ceilingSQL(ctx context.Context) (float64, error) {
	batch := b.o.maxPoll
	txns := max(4, b.o.events/batch)
	n := (txns + 2) * batch
	if _, err := b.Pool.Exec(ctx, `CREATE SEQUENCE consumerbench_seq`); err != nil {
		return 0, fmt.Errorf("pgbench sequence: %w", err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id)
SELECT 'pgb', 'pgb_' || i, 'payment.succeeded', '{"id":"x"}', true, 'bench' FROM generate_series(1, $1::int) i`, n); err != nil {
		return 0, fmt.Errorf("pgbench rows: %w", err)
	}
	script := filepath.Join(b.Dir, "consumer.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return 0, err
	}
	_, tps, _, err := benchenv.Pgbench(ctx, nil, "-n", "-M", "prepared", "-c", "1", "-D", "batch="+strconv.Itoa(batch),
		"-t", strconv.Itoa(txns), "-f", script, b.DBURL)
	return tps * float64(batch), err
}

package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/schemas"
)

// SIGKILL in the middle of a batched apply: the batch's transaction has
// applied some events' effects and is waiting for a row lock the test holds
// when the process dies. Nothing of the batch is committed (one
// transaction), and the next member applies every event exactly once.
func TestConsumerKilledMidBatchedApply(t *testing.T) {
	f := newFixture(t)
	const n = 30
	evs := ids("evt_mid_", n)
	for i, id := range evs {
		pay := fmt.Sprintf("pay_mid_%02d", i)
		f.api.setPayment(pay, 1, "succeeded")
		f.ingest(id, "payment.succeeded", pay)
	}
	ctx := context.Background()
	// The batch applies objects in key order; pay_mid_15 is in the middle.
	if _, err := f.pool.Exec(ctx, `INSERT INTO provider_objects (provider, object_id, object_type, version, data, last_event_id)
VALUES ($1, 'pay_mid_15', 'payment', 0, '{}', 'seed')`, f.provider); err != nil {
		t.Fatal(err)
	}
	lock, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) //nolint:errcheck // released below
	if _, err := lock.Exec(ctx, `SELECT 1 FROM provider_objects WHERE object_id = 'pay_mid_15' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	f.relay()
	spec, _ := json.Marshal(childSpec{Brokers: f.brokers, DB: f.dbURL, Provider: f.provider, Topic: f.topic, Group: f.group,
		APIURL: f.api.srv.URL, APIKey: f.api.key, Delays: f.delays})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the child's apply transaction waits for the lock: it has
	// run the statements of the objects before pay_mid_15.
	waitFor(t, 60*time.Second, "the batch's apply to wait on the held row", func() bool {
		var waiting int
		_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%consumers_apply%'`).Scan(&waiting)
		return waiting > 0
	})
	var uncommitted int
	_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events`).Scan(&uncommitted)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The killed backend's transaction is rolled back by PostgreSQL.
	waitFor(t, 30*time.Second, "the killed transaction to end", func() bool {
		var active int
		_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%consumers_apply%' AND pid <> pg_backend_pid()`).Scan(&active)
		return active == 0
	})
	var committed int
	_ = f.pool.QueryRow(ctx, `SELECT count(*) FROM processed_events`).Scan(&committed)
	if uncommitted != 0 || committed != 0 {
		t.Fatalf("processed_events while the batch waited: %d, after the kill: %d; want 0 (one transaction)", uncommitted, committed)
	}
	f.start(f.config(nil))
	f.waitState(schemas.StateSucceeded, 60*time.Second, evs...)
	eff := f.effects()
	for _, id := range evs {
		if eff[id] != 1 {
			t.Errorf("event %s applied %d times, want 1", id, eff[id])
		}
	}
}

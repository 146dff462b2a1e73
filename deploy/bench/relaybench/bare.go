package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// The replication drain's own ceiling: PostgreSQL's walsender streaming
// the same backlog to a reader that only receives (no decoding, no Kafka).
// A slot created before the backlog is written sees exactly its inserts;
// it is read after the relay's drain, so the two do not compete.

const bareSlot = "bench_bare"

// bareDrainResult is the "what" of the bare reader's rows.
const bareWhat = "walsender → bare pgoutput reader (receive only, no decoding, no Kafka)"

// createBareSlot creates the bare reader's slot (dropping a leftover).
func (b *bench) createBareSlot(ctx context.Context) error {
	if err := b.dropSlot(ctx, bareSlot); err != nil {
		return err
	}
	if _, err := b.Pool.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, bareSlot); err != nil {
		return fmt.Errorf("create slot %s: %w", bareSlot, err)
	}
	return nil
}

// bareDrain streams the bare slot until it received want inserts, then
// drops the slot. Throughput is want over the time from the start of
// replication to the last insert.
func (b *bench) bareDrain(ctx context.Context, want int) (result, error) {
	defer func() { _ = b.dropSlot(context.WithoutCancel(ctx), bareSlot) }()
	pcfg, err := pgconn.ParseConfig(b.DBURL)
	if err != nil {
		return result{}, err
	}
	pcfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, pcfg)
	if err != nil {
		return result{}, fmt.Errorf("bare reader: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	cpu0 := b.CPU()
	start := time.Now()
	if err := pglogrepl.StartReplication(ctx, conn, bareSlot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '2'", "publication_names 'gatehouse_outbox'", "streaming 'on'"}}); err != nil {
		return result{}, fmt.Errorf("bare reader: start replication: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	got := 0
	for got < want {
		msg, err := conn.ReceiveMessage(rctx)
		if err != nil {
			return result{}, fmt.Errorf("bare reader: after %d of %d inserts: %w", got, want, err)
		}
		// XLogData ('w', 24 bytes of header) carrying an Insert ('I').
		if cd, ok := msg.(*pgproto3.CopyData); ok && len(cd.Data) > 25 && cd.Data[0] == 'w' && cd.Data[25] == 'I' {
			got++
		}
	}
	elapsed := time.Since(start)
	cpu := b.CPU().Since(cpu0)
	r := result{what: bareWhat, offered: fmt.Sprintf("backlog of %d rows", want), n: want,
		throughput: float64(want) / elapsed.Seconds(), p50: -1, p99: -1, load: benchenv.LoadAvgText(), cpu: &cpu}
	b.Logf("bare reader: %.0f records/s; %s", r.throughput, cpuLog(cpu, want))
	return r, nil
}

// dropSlot drops a replication slot once its walsender has gone (a stopped
// relay's session may take a moment to end).
func (b *bench) dropSlot(ctx context.Context, slot string) error {
	var last error
	err := benchenv.Until(ctx, 200*time.Millisecond, 30*time.Second, func() (bool, error) {
		_, last = b.Pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1`, slot)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("drop replication slot %s: %w (%v)", slot, err, last)
	}
	return nil
}

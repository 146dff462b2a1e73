package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// setupPublication creates the insert-only publication on the outbox when
// it does not exist. The outbox is partitioned: the publication publishes
// through the root (publish_via_partition_root), so every insert arrives as
// an insert into "outbox" whatever partition holds it. An existing
// publication without that option is altered to it, since otherwise inserts
// would arrive under partition names this relay (and Debezium's
// table.include.list) does not read; a publication this role may not alter
// is an error that says so.
func (r *Relay) setupPublication(ctx context.Context) error {
	pub := r.cfg.Relay.Publication
	var viaRoot *bool
	err := r.cfg.Pool.QueryRow(ctx, `SELECT pubviaroot FROM pg_publication WHERE pubname = $1`, pub).Scan(&viaRoot)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("look up publication: %w", err)
	}
	if viaRoot != nil && *viaRoot {
		return nil
	}
	if viaRoot != nil {
		if _, err := r.cfg.Pool.Exec(ctx, `ALTER PUBLICATION `+pub+` SET (publish_via_partition_root = true)`); err != nil {
			return &fatalError{fmt.Errorf("publication %s publishes the outbox's partitions under their own names; "+
				"run ALTER PUBLICATION %s SET (publish_via_partition_root = true) as its owner: %w", pub, pub, err)}
		}
		r.log.Info("publication now publishes through the outbox's root", "publication", pub)
		return nil
	}
	_, err = r.cfg.Pool.Exec(ctx, `CREATE PUBLICATION `+pub+` FOR TABLE outbox WITH (publish = 'insert', publish_via_partition_root = true)`)
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42710") {
		return fmt.Errorf("create publication: %w", err)
	}
	r.log.Info("publication created", "publication", pub)
	return nil
}

// ensureSlot creates the persistent pgoutput slot when it does not exist
// and returns its confirmed flush LSN and whether it was created now.
func (r *Relay) ensureSlot(ctx context.Context, conn *pgconn.PgConn) (pglogrepl.LSN, bool, error) {
	var plugin, lsn *string
	err := r.cfg.Pool.QueryRow(ctx, `SELECT plugin, confirmed_flush_lsn::text FROM pg_replication_slots
		WHERE slot_name = $1 AND database = current_database()`, r.cfg.Relay.Slot).Scan(&plugin, &lsn)
	switch {
	case err == nil && plugin != nil && *plugin != "pgoutput":
		return 0, false, &fatalError{fmt.Errorf("replication slot %s uses plugin %s, not pgoutput", r.cfg.Relay.Slot, *plugin)}
	case err == nil && lsn != nil:
		l, err := pglogrepl.ParseLSN(*lsn)
		return l, false, err
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return 0, false, fmt.Errorf("look up replication slot: %w", err)
	}
	res, err := pglogrepl.CreateReplicationSlot(ctx, conn, r.cfg.Relay.Slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
	if err != nil {
		return 0, false, fmt.Errorf("create replication slot: %w", err)
	}
	r.log.Info("replication slot created", "slot", r.cfg.Relay.Slot, "consistent_point", res.ConsistentPoint)
	l, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	return l, true, err
}

// snapshot publishes the log's window (every row the cursor has not
// passed and committed now) before streaming starts, when the slot is new
// or a previous snapshot did not finish: rows committed before a slot's
// consistent point never come through it. The window is a superset of
// those rows (the slot exists already); streaming later repeats rows
// committed after the consistent point (at least once), never reorders a
// key, since the stream starts only after the window is on Kafka.
func (r *Relay) snapshot(ctx context.Context, created bool) error {
	slot := r.cfg.Relay.Slot
	if created {
		if _, err := r.cfg.Pool.Exec(ctx, `INSERT INTO relay_slot (slot) VALUES ($1)
			ON CONFLICT (slot) DO UPDATE SET created_at = now(), snapshot_done_at = NULL, confirmed_lsn = NULL`, slot); err != nil {
			return fmt.Errorf("record new slot: %w", err)
		}
	}
	var done bool
	err := r.cfg.Pool.QueryRow(ctx, `SELECT snapshot_done_at IS NOT NULL FROM relay_slot WHERE slot = $1`, slot).Scan(&done)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("look up slot snapshot: %w", err)
	}
	if done {
		return nil
	}
	if _, err := r.publishWindow(ctx, pathSnapshot); err != nil {
		return err
	}
	if _, err := r.cfg.Pool.Exec(ctx, `INSERT INTO relay_slot (slot, snapshot_done_at) VALUES ($1, now())
		ON CONFLICT (slot) DO UPDATE SET snapshot_done_at = now()`, slot); err != nil {
		return fmt.Errorf("record slot snapshot: %w", err)
	}
	return nil
}

// heartbeat writes a small non-transactional logical message now and then
// so the walsender has WAL of this database to decode and its keepalives
// let the slot advance on a quiet database.
func (r *Relay) heartbeat(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Relay.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := r.cfg.Pool.Exec(ctx, `SELECT pg_logical_emit_message(false, 'gatehouse.heartbeat', now()::text)`); err != nil && ctx.Err() == nil {
				r.log.Warn("relay heartbeat", "err", err)
			}
		}
	}
}

// resumeLSN is where streaming starts: the later of the slot's confirmed
// position and the one this relay recorded (relay_slot.confirmed_lsn).
// PostgreSQL before 17 may lose a logical slot's confirmed position in a
// restart (it persists it only when something else about the slot changed),
// and would then stream again what was already published; starting at the
// recorded position makes it skip every transaction that committed before
// it. A recorded position beyond the server's WAL (a restored database) is
// ignored.
func (r *Relay) resumeLSN(ctx context.Context, slotLSN pglogrepl.LSN) (pglogrepl.LSN, error) {
	var rec *string
	err := r.cfg.Pool.QueryRow(ctx, `SELECT confirmed_lsn::text FROM relay_slot
		WHERE slot = $1 AND confirmed_lsn <= pg_current_wal_insert_lsn()`, r.cfg.Relay.Slot).Scan(&rec)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && rec == nil) {
		return slotLSN, nil
	}
	if err != nil {
		return 0, fmt.Errorf("look up the recorded slot position: %w", err)
	}
	l, err := pglogrepl.ParseLSN(*rec)
	if err != nil {
		return 0, fmt.Errorf("parse the recorded slot position %q: %w", *rec, err)
	}
	if l <= slotLSN {
		return slotLSN, nil
	}
	r.log.Info("the slot's confirmed position is behind the one this relay recorded; resuming from the recorded one",
		"slot", r.cfg.Relay.Slot, "slot_lsn", slotLSN.String(), "recorded_lsn", l.String())
	return l, nil
}

// recordLSN stores the confirmed position (see resumeLSN); losing the
// write only means a restart may publish some rows again.
func (r *Relay) recordLSN(ctx context.Context, lsn pglogrepl.LSN) error {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit
	if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE relay_slot SET confirmed_lsn = $2::pg_lsn WHERE slot = $1`, r.cfg.Relay.Slot, lsn.String()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

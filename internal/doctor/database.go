package doctor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/internal/redact"
)

// dbSkipped stands for the checks that need a database that does not answer.
var dbSkipped = skip("database checks (clock, wal_level, migrations, replication slot, partitions)", "the database is not reachable")

// databaseChecks connects once and checks what the stages need of the
// database; only "database reachable" when it cannot connect.
func databaseChecks(ctx context.Context, o Options, cfg *config.Config) []Check {
	reach := Check{Name: "database reachable"}
	if err := cfg.RequireDatabase(); err != nil {
		reach.Detail, reach.Fix = err.Error(), "set database_url (or GATEHOUSE_DATABASE_URL) to the PostgreSQL URL, or a secret reference that resolves"
		return []Check{reach, dbSkipped}
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, cfg.DatabaseURL)
	if err == nil {
		err = conn.Ping(cctx)
	}
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) || (err != nil && !redact.ReadableDatabaseURL(cfg.DatabaseURL)) {
		// pgx's text of a connection string it cannot parse is a best
		// effort at hiding the password (its url.Parse error quotes it),
		// and one that parses as another host quotes the password as
		// a host, port or database name.
		reach.Detail = config.RedactDatabaseURL(cfg.DatabaseURL) + ": does not parse as a PostgreSQL URL or key=value connection string"
		reach.Fix = "percent-encode the special characters of the URL's user name and password (/ %2F, # %23, ? %3F, @ %40, : %3A, % %25), or quote the key=value form's values ('...')"
		return []Check{reach}
	}
	if err != nil {
		reach.Detail = fmt.Sprintf("%s: %v", config.RedactDatabaseURL(cfg.DatabaseURL), err)
		reach.Fix = "check database_url (host, port, database, user, password, sslmode) and that PostgreSQL ≥ 15 is running and accepts this host (pg_hba.conf)"
		if conn != nil {
			conn.Close(ctx)
		}
		return []Check{reach, dbSkipped}
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var version string
	var num int
	_ = conn.QueryRow(cctx, `SELECT current_setting('server_version'), current_setting('server_version_num')::int`).Scan(&version, &num)
	reach.OK, reach.Detail = true, "PostgreSQL "+version
	out := []Check{reach}
	if num > 0 && num < 150000 {
		out = append(out, Check{Name: "PostgreSQL ≥ 15", Detail: version, Fix: "upgrade PostgreSQL to 15 or later (the relay's publication and MERGE-free statements need it)"})
	}
	q := func(name string, fn func(ctx context.Context) Check) {
		qctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		c := fn(qctx)
		c.Name = name
		out = append(out, c)
	}
	q("clock in step with the database", func(ctx context.Context) Check { return clockCheck(ctx, conn, o) })
	noReplication := "relay.mode is " + cfg.Relay.Mode + ": the relay does not use logical replication"
	if cfg.Relay.Mode == "replication" {
		q("wal_level is logical", func(ctx context.Context) Check { return walCheck(ctx, conn) })
	} else {
		out = append(out, skip("wal_level is logical", noReplication))
	}
	q("migrations current", func(ctx context.Context) Check {
		pending, err := o.Migrate(ctx, cfg.DatabaseURL)
		switch {
		case err != nil:
			return Check{Detail: err.Error(), Fix: "run gatehouse migrate --config " + o.Path + " (as a role that may create tables)"}
		case pending != "":
			return Check{Detail: "pending: " + pending, Fix: "run gatehouse migrate --config " + o.Path + " before starting the new version"}
		}
		var version int64
		_ = conn.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version)
		return Check{OK: true, Detail: fmt.Sprintf("at version %d", version)}
	})
	if cfg.Relay.Mode == "replication" {
		q("replication slot and publication exist", func(ctx context.Context) Check { return slotCheck(ctx, conn, cfg) })
	} else {
		out = append(out, skip("replication slot and publication exist", noReplication))
	}
	q("no inactive replication slot retains WAL", func(ctx context.Context) Check { return strayCheck(ctx, conn, cfg, o.MaxSlotLag) })
	out = append(out, storageChecks(ctx, conn, cfg, o.Timeout)...)
	return out
}

func clockCheck(ctx context.Context, conn *pgx.Conn, o Options) Check {
	before := o.Now()
	var db time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
		return Check{Detail: err.Error(), Fix: "check the database connection"}
	}
	after := o.Now()
	local := before.Add(after.Sub(before) / 2)
	skew := db.Sub(local)
	c := Check{Detail: fmt.Sprintf("skew %s", skew.Round(time.Millisecond))}
	if skew.Abs() >= o.MaxSkew {
		c.Fix = fmt.Sprintf("synchronise the clocks (NTP/chrony) of this host and the database's: more than %s apart breaks timestamps, partitions and token expiry checks", o.MaxSkew)
		return c
	}
	c.OK = true
	return c
}

func walCheck(ctx context.Context, conn *pgx.Conn) Check {
	var level string
	if err := conn.QueryRow(ctx, `SHOW wal_level`).Scan(&level); err != nil {
		return Check{Detail: err.Error()}
	}
	if level != "logical" {
		return Check{Detail: "wal_level is " + level,
			Fix: "ALTER SYSTEM SET wal_level = logical and restart PostgreSQL (managed: the logical replication parameter), or set relay.mode: poll"}
	}
	return Check{OK: true, Detail: level}
}

// slotCheck: the relay's slot (pgoutput) and publication exist, and the
// WAL the slot retains is within bounds.
func slotCheck(ctx context.Context, conn *pgx.Conn, cfg *config.Config) Check {
	slot, pub := cfg.Relay.Slot, cfg.Relay.Publication
	var pubOK bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)`, pub).Scan(&pubOK); err != nil {
		return Check{Detail: err.Error()}
	}
	var plugin string
	var active bool
	var lag *int64
	err := conn.QueryRow(ctx, `SELECT plugin, active, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint
FROM pg_replication_slots WHERE slot_name = $1 AND database = current_database()`, slot).Scan(&plugin, &active, &lag)
	missing := []string{}
	if errors.Is(err, pgx.ErrNoRows) {
		missing = append(missing, "slot "+slot)
	} else if err != nil {
		return Check{Detail: err.Error()}
	}
	if !pubOK {
		missing = append(missing, "publication "+pub)
	}
	if len(missing) > 0 {
		return Check{Detail: fmt.Sprintf("missing %v", missing),
			Fix: "start gatehouse relay once: it creates slot " + slot + " (pgoutput) and publication " + pub + " (FOR TABLE outbox); its role needs REPLICATION"}
	}
	if plugin != "pgoutput" {
		return Check{Detail: "slot " + slot + " uses plugin " + plugin, Fix: "drop it (SELECT pg_drop_replication_slot('" + slot + "')) and start gatehouse relay, or set relay.slot to another name"}
	}
	state := "active"
	if !active {
		state = "inactive: no relay connected yet"
	}
	c := Check{OK: true, Detail: fmt.Sprintf("slot %s (%s, lag %s), publication %s", slot, state, bytesText(lag), pub)}
	if lag != nil && *lag > int64(1)<<30 {
		c.OK = false
		c.Fix = "the relay is behind or stopped: start gatehouse relay and check kafka (docs/RUNBOOK.md); the slot keeps this WAL on the database's disk"
	}
	return c
}

// strayCheck fails on an inactive replication slot of this database that
// is not the relay's and retains more than maxLag of WAL: nothing will
// ever read it, and PostgreSQL keeps its WAL until the disk fills.
func strayCheck(ctx context.Context, conn *pgx.Conn, cfg *config.Config, maxLag int64) Check {
	rows, err := conn.Query(ctx, `SELECT slot_name, coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint
FROM pg_replication_slots WHERE NOT active AND (database = current_database() OR database IS NULL) ORDER BY slot_name`)
	if err != nil {
		return Check{Detail: err.Error()}
	}
	type slot struct {
		name string
		lag  int64
	}
	slots, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (slot, error) {
		var s slot
		return s, r.Scan(&s.name, &s.lag)
	})
	if err != nil {
		return Check{Detail: err.Error()}
	}
	var bad []string
	for _, s := range slots {
		if s.name == cfg.Relay.Slot && cfg.Relay.Mode == "replication" && s.lag <= maxLag {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s (retains %s)", s.name, bytesText(&s.lag)))
	}
	if len(bad) > 0 {
		return Check{Detail: fmt.Sprintf("inactive: %v", bad),
			Fix: "start the consumer of each slot, or drop the ones nothing reads: SELECT pg_drop_replication_slot('<name>')"}
	}
	return Check{OK: true, Detail: fmt.Sprintf("%d inactive", len(slots))}
}

func bytesText(n *int64) string {
	switch {
	case n == nil:
		return "unknown"
	case *n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(*n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", *n)
}

package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	"github.com/gatehouse/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/migrations"
)

// PendingMigrations reports the first embedded migration the database at
// dbURL lacks ("" when none), without applying anything: goose runs on a
// session whose transactions are read-only, so the first pending
// migration fails with PostgreSQL's read-only error instead of applying.
func PendingMigrations(ctx context.Context, dbURL string) (string, error) {
	ro := dbURL
	if u, err := url.Parse(dbURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()
		ro = u.String()
	} else {
		ro += " default_transaction_read_only=on"
	}
	_, err := migrations.UpLogged(ctx, ro, nil)
	var pgErr *pgconn.PgError
	var partial *goose.PartialError
	switch {
	case err == nil:
		return "", nil
	case !errors.As(err, &pgErr) || pgErr.Code != "25006": // read_only_sql_transaction
		return "", err
	case errors.As(err, &partial) && partial.Failed != nil && partial.Failed.Source != nil:
		return fmt.Sprintf("%s (version %d) and any after it", filepath.Base(partial.Failed.Source.Path), partial.Failed.Source.Version), nil
	}
	return "every migration (none is applied)", nil
}

// partitioned are the time-partitioned tables of ingest's maintenance
// (upkeep.NewMaintenance), each with the retention after which its
// partitions are dropped and its partition width.
func partitioned(c *config.Config) []struct {
	table               string
	retention, interval time.Duration
} {
	payload, key := c.Lifetimes()
	s := c.Storage
	return []struct {
		table               string
		retention, interval time.Duration
	}{
		{"inbox", payload, s.PartitionInterval},
		{"dedupe_keys", key + s.KeyPartitionInterval, s.KeyPartitionInterval},
		{"outbox", s.OutboxRetention, s.OutboxPartitionInterval},
	}
}

// storageChecks: partitions exist ahead of now (serve's maintenance
// creates them every storage.check_interval), and no partition outlived
// its retention by more than a partition and two passes (the retention
// passes record no success in the database; a partition past its drop
// time is what a failing pass leaves).
func storageChecks(ctx context.Context, conn *pgx.Conn, cfg *config.Config, timeout time.Duration) []Check {
	ahead := Check{Name: "time partitions created ahead", OK: true}
	kept := Check{Name: "retention passes dropping expired partitions", OK: true}
	var aheadDetail, keptDetail, held []string
	for _, t := range partitioned(cfg) {
		qctx, cancel := context.WithTimeout(ctx, timeout)
		var leadS, oldestS *float64
		err := conn.QueryRow(qctx, `SELECT extract(epoch FROM max(ends) - now())::float8, extract(epoch FROM now() - min(ends))::float8
FROM storage_partitions WHERE parent = $1`, t.table).Scan(&leadS, &oldestS)
		cancel()
		lead, oldest := seconds(leadS), seconds(oldestS)
		if err != nil {
			ahead.OK, ahead.Detail = false, err.Error()
			ahead.Fix = "run gatehouse migrate: storage_partitions is missing"
			return []Check{ahead}
		}
		switch {
		case lead == nil:
			ahead.OK = false
			aheadDetail = append(aheadDetail, t.table+" has no partition")
		case *lead < t.interval:
			ahead.OK = false
			aheadDetail = append(aheadDetail, fmt.Sprintf("%s ends in %s", t.table, lead.Round(time.Second)))
		default:
			aheadDetail = append(aheadDetail, fmt.Sprintf("%s %s ahead", t.table, config.FormatDuration(lead.Round(time.Minute))))
		}
		if oldest == nil {
			continue
		}
		grace := t.retention + t.interval + 2*cfg.Storage.CheckInterval
		if *oldest > grace {
			kept.OK = false
			keptDetail = append(keptDetail, fmt.Sprintf("%s's oldest partition ended %s ago (retention %s)", t.table,
				config.FormatDuration(oldest.Round(time.Minute)), config.FormatDuration(t.retention)))
			if t.table == "outbox" {
				held = append(held, "outbox")
			}
		}
	}
	ahead.Detail = strings.Join(aheadDetail, ", ")
	if !ahead.OK {
		ahead.Fix = fmt.Sprintf("start gatehouse serve: its storage maintenance creates %d partitions ahead every storage.check_interval (%s); "+
			"if it runs, look for \"storage maintenance\" warnings in its log", cfg.Storage.Ahead, config.FormatDuration(cfg.Storage.CheckInterval))
	}
	kept.Detail = strings.Join(keptDetail, "; ")
	if kept.OK {
		kept.Detail = "no partition outlived its retention"
	} else {
		kept.Fix = "check serve's log for \"storage maintenance\" errors and gatehouse_storage_maintenance_errors_total (docs/STORAGE.md)"
		if len(held) > 0 {
			kept.Fix += "; an outbox partition is kept while a relay's cursor has not passed its rows: start gatehouse relay"
		}
	}
	return []Check{ahead, kept}
}

func seconds(s *float64) *time.Duration {
	if s == nil {
		return nil
	}
	d := time.Duration(*s * float64(time.Second))
	return &d
}

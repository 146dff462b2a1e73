package upkeep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Search indexes (config Provider.Search "indexed"; the API's payload
// search, api/search.go): every inbox partition carries, for each such
// provider, a jsonb_path_ops GIN index of that provider's payloads (a
// partial index, WHERE provider = '<name>'), so a containment search of
// one provider reads only its matching rows. The maintenance pass keeps
// them: a partition created ahead (still empty) gets its indexes at once;
// an existing partition (search switched on for a provider with history)
// gets them with CREATE INDEX CONCURRENTLY, which does not block the
// receiver's writes; an index left invalid by an interrupted build is
// built again; the index of a provider no longer indexed is dropped. A
// partition's indexes go with it when it is dropped.
//
// The write's cost: a GIN index takes a row's path-value pairs into a
// pending list (fastupdate) and merges the list into the index when it
// outgrows gin_pending_list_limit, in whichever insert passes the limit,
// a receiver's write. So the indexes are created with a pending list of
// searchPendingKB, and every maintenance pass merges each current
// partition's list (gin_clean_pending_list) in the background: the
// receiver's writes only append, and a search reads at most a pass's worth
// of pending rows besides the index.

// searchPendingKB is the search indexes' gin_pending_list_limit (kB): a
// pass's worth of a busy provider's rows (64 MiB).
const searchPendingKB = "65536"

// searchIndexName is the name of provider's search index on partition.
func searchIndexName(partition, provider string) string {
	h := sha256.Sum256([]byte(provider))
	return partition + "_search_" + hex.EncodeToString(h[:4])
}

// keepSearchIndexes brings the inbox partitions' search indexes in line
// with indexed (the providers whose search is indexed) and returns the
// indexes it created and dropped.
func keepSearchIndexes(ctx context.Context, conn *pgx.Conn, indexed []string) (created, dropped []string, err error) {
	rows, err := conn.Query(ctx, `SELECT name, starts > now() FROM storage_partitions WHERE parent = 'inbox' ORDER BY starts`)
	if err != nil {
		return nil, nil, fmt.Errorf("list inbox partitions: %w", err)
	}
	type partition struct {
		name  string
		ahead bool
	}
	parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (partition, error) {
		var p partition
		return p, r.Scan(&p.name, &p.ahead)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list inbox partitions: %w", err)
	}
	rows, err = conn.Query(ctx, `SELECT i.relname, x.indisvalid FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_inherits h ON h.inhrelid = x.indrelid
WHERE h.inhparent = 'inbox'::regclass AND i.relname LIKE '%\_search\_%'`)
	if err != nil {
		return nil, nil, fmt.Errorf("list search indexes: %w", err)
	}
	valid := map[string]bool{}
	existing, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var name string
		var ok bool
		err := r.Scan(&name, &ok)
		valid[name] = ok
		return name, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list search indexes: %w", err)
	}
	want := map[string]bool{}
	for _, p := range parts {
		for _, provider := range indexed {
			name := searchIndexName(p.name, provider)
			want[name] = true
			if ok, there := valid[name]; there && ok {
				continue
			} else if there {
				if err := dropIndex(ctx, conn, name); err != nil {
					return created, dropped, err
				}
			}
			how := "CREATE INDEX CONCURRENTLY"
			if p.ahead {
				how = "CREATE INDEX" // empty until its range begins: instant, and nobody writes to it yet
			}
			q := how + " IF NOT EXISTS " + pgx.Identifier{name}.Sanitize() + " ON " + pgx.Identifier{p.name}.Sanitize() +
				" USING gin (payload jsonb_path_ops) WITH (fastupdate = on, gin_pending_list_limit = " + searchPendingKB +
				") WHERE provider = " + quoteLiteral(provider)
			if _, err := conn.Exec(ctx, q); err != nil {
				return created, dropped, fmt.Errorf("create search index %s: %w", name, err)
			}
			created = append(created, name)
		}
	}
	// Merge the pending lists of the partitions being written (the
	// current one and its neighbours): the receiver never has to.
	if _, err := conn.Exec(ctx, `SELECT gin_clean_pending_list(i.oid) FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_inherits h ON h.inhrelid = x.indrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN storage_partitions p ON p.name = t.relname AND p.parent = 'inbox'
WHERE h.inhparent = 'inbox'::regclass AND i.relname LIKE '%\_search\_%' AND x.indisvalid AND p.ends > now() - interval '1 hour' AND p.starts < now() + interval '1 hour'`); err != nil {
		return created, dropped, fmt.Errorf("merge search indexes' pending lists: %w", err)
	}
	for _, name := range existing {
		if !want[name] {
			if err := dropIndex(ctx, conn, name); err != nil {
				return created, dropped, err
			}
			dropped = append(dropped, name)
		}
	}
	return created, dropped, nil
}

func dropIndex(ctx context.Context, conn *pgx.Conn, name string) error {
	if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("drop search index %s: %w", name, err)
	}
	return nil
}

// quoteLiteral is s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

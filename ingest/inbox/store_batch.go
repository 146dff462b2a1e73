package inbox

import (
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The Writer's batches: which deliveries a statement writes, and which
// errors are retried or answered as the delivery's own.

// dedupeBatch returns the deliveries of batch to write in one statement,
// in a stable key order (concurrent batches lock in the same order); for
// each other delivery of an event id already in it, the one written in its
// place; and the deliveries of a replay guard key already in it under
// another event id, which wait for a later statement (later): the guard
// must see what the first stored, and a statement writes a guard row once.
func dedupeBatch(batch []*pending) (uniq []*pending, firstOf map[*pending]*pending, later map[*pending]struct{}) {
	uniq = make([]*pending, 0, len(batch))
	byID := make(map[[2]string]*pending, len(batch))
	var byGuard map[string]*pending
	for _, p := range batch {
		k := [2]string{p.rec.Provider, p.rec.EventID}
		if f, ok := byID[k]; ok {
			firstOf = addFirst(firstOf, p, f)
			continue
		}
		if g := p.rec.Guard.Key; g != nil {
			if _, ok := byGuard[string(g)]; ok {
				if later == nil {
					later = map[*pending]struct{}{}
				}
				later[p] = struct{}{}
				continue
			}
			if byGuard == nil {
				byGuard = map[string]*pending{}
			}
			byGuard[string(g)] = p
		}
		byID[k] = p
		uniq = append(uniq, p)
	}
	slices.SortFunc(uniq, func(a, b *pending) int {
		if c := strings.Compare(a.rec.Provider, b.rec.Provider); c != 0 {
			return c
		}
		return strings.Compare(a.rec.EventID, b.rec.EventID)
	})
	return uniq, firstOf, later
}

func addFirst(m map[*pending]*pending, p, first *pending) map[*pending]*pending {
	if m == nil {
		m = map[*pending]*pending{}
	}
	m[p] = first
	return m
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// refused reports an error caused by one row's content, which writing
// that row again cannot cure: SQLSTATE class 22 (data exception: JSON
// jsonb cannot hold, a value too long), class 54 (program limit exceeded:
// 54000 an index row larger than a btree page allows, 54001 nesting too
// deep) and the integrity violations one row commits on its own (23502
// not null, 23514 check). A coalesced statement refused so is split, and
// only the row that fails alone is answered 400.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch c := pgErr.Code; {
	case c == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation"):
		// No time partition covers now (maintenance fell behind): the
		// database's state, not the event's content; a retry succeeds
		// once the partition exists (docs/STORAGE.md, "How storage stays bounded").
		return false
	case strings.HasPrefix(c, "22"), strings.HasPrefix(c, "54"), c == "23502", c == "23514":
		return true
	}
	return false
}

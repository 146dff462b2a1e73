package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The Writer's statement run for one batch: its arguments built column
// by column, its outcomes read back, and the duplicates' stored state.

// querier runs the write statement: the Writer's pool, or a test's transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// execOn writes uniq; filters (nil: none) say which key partitions each
// new id is probed in (keyfilter.go).
func execOn(ctx context.Context, q querier, uniq []*pending, filters *keyFilters) error {
	a, err := insertArgs(uniq, filters)
	if err != nil {
		return err
	}
	dups, err := insertOutcomes(ctx, q, uniq, a)
	if err != nil || len(dups.ord) == 0 {
		return err
	}
	// The batch is committed. A failure here (the connection lost) answers
	// the batch as not recorded, as a crash between commit and answer
	// would: the provider's retry is then a duplicate, recorded once.
	return duplicateStates(ctx, q, uniq, dups)
}

// batchArgs are insertSQL's arguments for one batch (all), and the
// columns its outcomes are read against.
type batchArgs struct {
	provs, ids []string
	outbox     []pgtype.UUID
	all        []any
}

// duplicates are the rows of a batch that were already stored: provider,
// event id (the guard's first one, for a duplicate of other content) and
// index in the batch.
type duplicates struct {
	provs, ids []string
	ord        []int32
}

// insertArgs builds insertSQL's arguments for uniq: its rows as one jsonb
// array (store_input.go) and the batch's longest key lifetime.
func insertArgs(uniq []*pending, filters *keyFilters) (batchArgs, error) {
	n := len(uniq)
	var (
		provs, ids = make([]string, n), make([]string, n)
		outbox     = make([]pgtype.UUID, n)
		key        []byte
		maxLife    float64
		size       = 2
	)
	for _, p := range uniq {
		size += len(p.rec.Payload) + 512
	}
	w := inputRow{b: make([]byte, 0, size)}
	w.b = append(w.b, '[')
	for i, p := range uniq {
		r := p.rec
		provs[i], ids[i] = r.Provider, r.EventID
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, '{')
		w.str("p", r.Provider)
		w.str("e", r.EventID)
		w.str("t", r.Type)
		w.raw("d", r.Payload)
		if r.CreatedAt != nil {
			w.time("c", pgtype.Timestamptz{Time: *r.CreatedAt, Valid: true})
		}
		w.str("s", r.SecretID)
		id, err := uuid.NewV7()
		if err != nil {
			return batchArgs{}, fmt.Errorf("outbox id: %w", err)
		}
		outbox[i] = pgtype.UUID{Bytes: id, Valid: true}
		w.str("o", id.String())
		w.str("a", r.AggregateID)
		w.str("k", r.Topic)
		w.int("n", i)
		switch {
		case r.EventTime != "":
			w.str("m", r.EventTime)
		case r.CreatedAt != nil:
			w.str("m", r.CreatedAt.UTC().Format(time.RFC3339Nano))
		}
		life := DefaultKeyLifetime.Seconds()
		if r.KeyLifetime > 0 {
			life = r.KeyLifetime.Seconds()
		}
		maxLife = max(maxLife, life)
		w.num("l", life)
		w.text("r", pgtype.Text{String: r.Traceparent, Valid: r.Traceparent != ""})
		key = filterKey(key, r.Provider, r.EventID)
		pr := filters.probeOf(key)
		w.time("f", pr.from)
		for j, win := range pr.windows {
			w.time(windowKeys[j][0], win[0])
			w.time(windowKeys[j][1], win[1])
		}
		w.bytes("g", r.Guard.Key)
		w.num("x", r.Guard.TTL.Seconds())
		via := ViaWebhook
		if r.Via != "" {
			via = r.Via
		}
		w.str("y", via)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
	return batchArgs{provs: provs, ids: ids, outbox: outbox, all: []any{w.b, maxLife}}, nil
}

// windowKeys are the input's keys of a probe's windows' starts and ends.
var windowKeys = [maxProbeWindows][2]string{{"u1", "v1"}, {"u2", "v2"}}

// insertOutcomes runs insertSQL and reads each row's outcome into uniq;
// it returns the duplicates, whose stored state is still to read.
func insertOutcomes(ctx context.Context, q querier, uniq []*pending, a batchArgs) (duplicates, error) {
	var dups duplicates
	rows, err := q.Query(ctx, insertSQL, a.all...)
	if err != nil {
		return dups, fmt.Errorf("insert inbox and outbox: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i     int32
			isNew bool
			first pgtype.Text // the event id the guard's record holds
		)
		if err := rows.Scan(&i, &isNew, &first); err != nil {
			return dups, fmt.Errorf("scan outcome: %w", err)
		}
		o := Outcome{New: isNew, State: "pending"}
		switch {
		case isNew:
			o.OutboxID = a.outbox[i].Bytes
		case first.Valid && first.String != a.ids[i] && uniq[i].rec.Guard.Token:
			o = Outcome{Replayed: true}
		default:
			id := a.ids[i]
			if first.Valid && first.String != id {
				id, o.DuplicateOf = first.String, first.String
			}
			o.State = StateExpired // unless duplicateStateSQL finds its row
			dups.provs, dups.ids, dups.ord = append(dups.provs, a.provs[i]), append(dups.ids, id), append(dups.ord, i)
		}
		uniq[i].out = o
	}
	rows.Close() // reads through the commit's ReadyForQuery
	if err := rows.Err(); err != nil {
		return dups, fmt.Errorf("insert inbox and outbox: %w", err)
	}
	return dups, nil
}

// duplicateStates reads the stored state and attempts of the duplicates
// into their outcomes.
func duplicateStates(ctx context.Context, q querier, uniq []*pending, dups duplicates) error {
	rows, err := q.Query(ctx, duplicateStateSQL, dups.provs, dups.ids, dups.ord)
	if err != nil {
		return fmt.Errorf("read the duplicates' stored state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			i        int32
			state    string
			attempts int32
		)
		if err := rows.Scan(&i, &state, &attempts); err != nil {
			return fmt.Errorf("scan stored state: %w", err)
		}
		uniq[i].out.State, uniq[i].out.Attempts = state, int(attempts)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the duplicates' stored state: %w", err)
	}
	return nil
}

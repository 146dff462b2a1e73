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

// insertArgs builds insertSQL's arguments for uniq, column by column.
func insertArgs(uniq []*pending, filters *keyFilters) (batchArgs, error) {
	n := len(uniq)
	var (
		provs, ids, types, secrets, aggs, topics = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payloads, times, tps                     = make([]string, n), make([]pgtype.Text, n), make([]pgtype.Text, n)
		// pgtype's own types encode directly; uuid.UUID would go through
		// driver.Valuer (to text and back) and *time.Time through reflection,
		// together ~8 µs of receiver CPU per event (ingestbench profile).
		created = make([]pgtype.Timestamptz, n)
		outbox  = make([]pgtype.UUID, n)
		ord     = make([]int32, n)
		life    = make([]float64, n)
		probes  = newProbeArgs(n)
		key     []byte
		maxLife float64
		gKeys   = make([][]byte, n)
		gTTL    = make([]float64, n)
		via     = make([]string, n)
	)
	for i, p := range uniq {
		r := p.rec
		provs[i], ids[i], types[i], secrets[i], aggs[i], topics[i] = r.Provider, r.EventID, r.Type, r.SecretID, r.AggregateID, r.Topic
		payloads[i], ord[i] = string(r.Payload), int32(i)
		life[i] = DefaultKeyLifetime.Seconds()
		if r.KeyLifetime > 0 {
			life[i] = r.KeyLifetime.Seconds()
		}
		maxLife = max(maxLife, life[i])
		gKeys[i], gTTL[i] = r.Guard.Key, r.Guard.TTL.Seconds()
		via[i] = ViaWebhook
		if r.Via != "" {
			via[i] = r.Via
		}
		tps[i] = pgtype.Text{String: r.Traceparent, Valid: r.Traceparent != ""}
		key = filterKey(key, r.Provider, r.EventID)
		probes.set(i, filters.probeOf(key))
		if r.CreatedAt != nil {
			created[i] = pgtype.Timestamptz{Time: *r.CreatedAt, Valid: true}
		}
		switch {
		case r.EventTime != "":
			times[i] = pgtype.Text{String: r.EventTime, Valid: true}
		case r.CreatedAt != nil:
			times[i] = pgtype.Text{String: r.CreatedAt.UTC().Format(time.RFC3339Nano), Valid: true}
		}
		id, err := uuid.NewV7()
		if err != nil {
			return batchArgs{}, fmt.Errorf("outbox id: %w", err)
		}
		outbox[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	args := append([]any{provs, ids, types, payloads, created, secrets, outbox, aggs, topics, ord, times, life, maxLife, tps}, probes.args()...)
	args = append(args, gKeys, gTTL, via)
	return batchArgs{provs: provs, ids: ids, outbox: outbox, all: args}, nil
}

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

package consumers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/text"
	"github.com/gatehouse/gatehouse/schemas"
)

// The drain of parked keys (parking.go): every member of the group looks
// for ready keys every parkDrainEvery, takes each under a row lock (FOR
// UPDATE SKIP LOCKED: one member drains a key at a time, whoever holds its
// partition), and delivers its parked events in order, without waiting
// for an open circuit (the key is tried again after parkOpenWait; the
// circuit's probe is one of these deliveries). A parked event
// that fails with a retryable error becomes the key's head and is tried
// again after the retry ladder's delays, as often as the ladder would; one
// that fails for good, or runs out of attempts, is dead-lettered (its
// inbox row dead, with the error) and on_dead decides for the rest.

const (
	parkDrainEvery  = 200 * time.Millisecond
	parkDrainKeys   = 64 // keys read per round
	parkDrainAtOnce = 16 // keys drained at once
	parkGaugesEvery = 5 * time.Second
	parkOpenWait    = time.Second // a key whose destination's circuit is open is tried again after this
	// parkUnappliedWait: a key whose next parked event's batch has not
	// applied yet is tried again after this (see below).
	parkUnappliedWait = 100 * time.Millisecond
)

// Parking and the batch's apply. A batch's handle stage
// parks an event (its own transaction, under the key's row lock, so a drain
// finishing the key either sees it or is waited for), and the batch's
// apply commits the event's inbox state later. The drain delivers a parked
// event only once its inbox row is terminal (the batch applied it; or a
// retry, or the dead-letter topic, ended it), and nothing of its key after
// it. So the parking takes effect when the batch's processed state
// commits, as if in its transaction:
//   - a crash after the parking, before the apply: the event stays parked,
//     undelivered; the records are delivered again (their offsets were not
//     marked), the handler parks the event again (a no-op: one row per
//     event), and the apply that then commits releases it to the drain; had
//     the drain sent it meanwhile, the redelivered record would find its
//     key gone and be sent a second time, after its key's later events;
//   - a crash after the apply: the parking committed before it;
//   - the bound dead-letters only keys whose events all applied
//     (deadLetterOldest), so no apply finishing later records one of them
//     succeeded.

// drainParked drains ready keys until ctx ends, and keeps the parking
// gauges current.
func (r *Runner) drainParked(ctx context.Context) {
	t := time.NewTicker(parkDrainEvery)
	defer t.Stop()
	dl, err := r.newDeadLetters()
	if err != nil { // the drain still delivers; a key whose event dies stays parked until a producer can write it
		r.log.Error("parking: no dead-letter producer", "err", err)
	} else {
		defer dl.cl.Close()
	}
	var gaugedAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.boundParked(ctx, dl)
		r.drainRound(ctx, dl)
		if now := time.Now(); now.Sub(gaugedAt) >= parkGaugesEvery {
			gaugedAt = now
			if err := r.store.gaugeParking(ctx, r.pm); err != nil && ctx.Err() == nil {
				r.log.Warn("parking gauges", "err", err)
			}
		}
	}
}

// boundParked dead-letters the oldest parked keys of every ordered
// destination beyond its bounds (max_parked_keys, max_parked_events),
// their events written to the dead-letter topic by dl.
func (r *Runner) boundParked(ctx context.Context, dl deadLetters) {
	for provider, fws := range r.cfg.Handlers.ordered {
		dead := func(ctx context.Context, reason string, evs []parkedEvent) error {
			return dl.write(ctx, provider, parkedEvents(evs), 1, event.ClassPermanent, errors.New(reason))
		}
		for dest, fw := range fws {
			_, _, maxKeys, maxEvents := fw.Ordering()
			if err := r.store.bound(ctx, dest, provider, maxKeys, maxEvents, dead); err != nil && ctx.Err() == nil {
				r.log.Warn("bound parked keys", "destination", dest, "provider", provider, "err", err)
			}
		}
	}
}

// drainRound drains the keys ready now, parkDrainAtOnce at a time; dl
// writes the parked events that die to the dead-letter topic.
func (r *Runner) drainRound(ctx context.Context, dl deadLetters) {
	keys, err := r.store.readyKeys(ctx, parkDrainKeys)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("drain parked keys", "err", err)
		}
		return
	}
	sem := make(chan struct{}, parkDrainAtOnce)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := r.drainKey(ctx, k, dl); err != nil && ctx.Err() == nil {
				r.log.Warn("drain parked key", "destination", k.dest, "provider", k.provider, "key", k.key, "err", err)
			}
		}()
	}
	wg.Wait()
}

// drainKey delivers k's parked events in order, each removed once
// delivered; the key is removed when none is left. An event that dies is
// written to the dead-letter topic by dl first.
func (r *Runner) drainKey(ctx context.Context, k parkKey, dl deadLetters) error {
	fw := r.cfg.Handlers.orderedTo(k.provider, k.dest)
	if fw == nil {
		return errors.New("no forward ordered per object to this destination is configured: the key stays parked")
	}
	tx, err := r.store.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var onDead string
	var attempts int
	err = tx.QueryRow(ctx, `SELECT on_dead, attempts FROM parked_keys WHERE destination = $1 AND provider = $2 AND kafka_key = $3
  AND state = 'ready' FOR UPDATE SKIP LOCKED`, k.dest, k.provider, k.key).Scan(&onDead, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // drained by another member, or held meanwhile
	}
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	evs, err := parkedOf(ctx, tx, k)
	if err != nil {
		return err
	}
	commit := func() error {
		if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		return nil
	}
	// later keeps what was delivered and tries the key again after d
	later := func(d time.Duration) error {
		if _, err := tx.Exec(ctx, `UPDATE parked_keys SET next_at = now() + $4::interval
WHERE destination = $1 AND provider = $2 AND kafka_key = $3`, k.dest, k.provider, k.key, d.String()); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		return commit()
	}
	for _, p := range evs {
		if !p.applied { // its batch has not committed yet: it and the rest wait (see the top of the file)
			return later(parkUnappliedWait)
		}
		p.ev.Attempt = attempts + 1
		_, derr := fw.DeliverOrdered(ctx, &p.ev, p.obj)
		if derr != nil && ctx.Err() != nil {
			return commit() // what was delivered stays delivered; the rest waits
		}
		if errors.Is(derr, event.ErrCircuitOpen) { // not a failure of the event: try again after a while
			return later(parkOpenWait)
		}
		dead := derr != nil && (event.Classify(derr) != event.ClassTransient || attempts >= len(r.layout.delays))
		if derr != nil {
			r.drainIssue(ctx, tx, k, &p.ev, derr)
		}
		if dead {
			if err := dl.write(ctx, k.provider, []*event.Event{&p.ev}, p.ev.Attempt, event.Classify(derr), derr); err != nil {
				return errors.Join(err, later(parkOpenWait)) // it stays parked, tried again
			}
		}
		if derr == nil || dead {
			if _, err := tx.Exec(ctx, `DELETE FROM parked_events WHERE seq = $1`, p.seq); err != nil {
				return fmt.Errorf("drain: %w", err)
			}
		}
		if derr == nil {
			attempts = 0
			continue
		}
		if !dead {
			_, err := tx.Exec(ctx, `UPDATE parked_keys SET head_event_id = $4, head_error = $5, attempts = $6, next_at = now() + $7::interval
WHERE destination = $1 AND provider = $2 AND kafka_key = $3`, k.dest, k.provider, k.key, p.ev.ID, FailureSummary(derr),
				attempts+1, r.layout.delays[attempts].String())
			if err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			return commit()
		}
		// dead: recorded on its inbox row (replayable); on_dead decides for the rest
		r.log.Warn("parked event dead-lettered", "destination", k.dest, "provider", k.provider, "event_id", p.ev.ID, "err", derr)
		if _, err := tx.Exec(ctx, `UPDATE inbox SET processing_state = $3, last_error = $4, last_error_class = $5, next_attempt_at = NULL,
  updated_at = now() WHERE provider = $1 AND event_id = $2`, k.provider, p.ev.ID, schemas.StateDead,
			text.Truncate(derr.Error(), maxErrorMessage), event.Classify(derr)); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		attempts = 0
		if onDead == "hold" {
			_, err := tx.Exec(ctx, `UPDATE parked_keys SET state = 'held', head_event_id = $4, head_error = $5, attempts = 0
WHERE destination = $1 AND provider = $2 AND kafka_key = $3`, k.dest, k.provider, k.key, p.ev.ID, FailureSummary(derr))
			if err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			return commit()
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM parked_keys WHERE destination = $1 AND provider = $2 AND kafka_key = $3`,
		k.dest, k.provider, k.key); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return commit()
}

// drainIssue counts the failed delivery of parked event ev, drained to
// k's destination, into its failure issue in tx (stage forward:<k's
// destination>, as a delivery from a batch): the console's parked keys then
// name the issue of a head the drain made, and the issue counts the
// drain's failures beside the batches'. It runs under a savepoint: when
// the issue cannot be written, the drain still records what it did, and
// the error is logged.
func (r *Runner) drainIssue(ctx context.Context, tx pgx.Tx, k parkKey, ev *event.Event, derr error) {
	at := ev.ReceivedAt
	if at.IsZero() { // a row parked before its received_at was known
		at = time.Now()
	}
	err := inSavepoint(ctx, tx, func(sp pgx.Tx) error {
		return recordIssue(ctx, sp, k.provider, ev.ID, ev.Type, at, event.StageForwardPrefix+k.dest,
			event.Classify(derr), text.Truncate(derr.Error(), maxErrorMessage), FailureSummary(derr), time.Now())
	})
	if err != nil && ctx.Err() == nil {
		r.log.Warn("failure issue of a drained parked event", "destination", k.dest, "provider", k.provider, "event_id", ev.ID, "err", err)
	}
}

// parkMetrics are the parking gauges, per destination.
type parkMetrics struct {
	keys, events, oldest *prometheus.GaugeVec
}

func newParkMetrics(reg prometheus.Registerer) *parkMetrics {
	m := &parkMetrics{
		keys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_consumer_forward_parked_keys",
			Help: "Keys (objects) parked behind a failed event, per forward destination ordered per object.",
		}, []string{"destination"}),
		events: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_consumer_forward_parked_events",
			Help: "Events parked behind their key's failed event, per forward destination ordered per object.",
		}, []string{"destination"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gatehouse_consumer_forward_parked_oldest_age_seconds",
			Help: "Age of the oldest parked key's wait (since its head event failed), per forward destination ordered per object.",
		}, []string{"destination"}),
	}
	if reg != nil {
		reg.MustRegister(m.keys, m.events, m.oldest)
	}
	return m
}

// gaugeParking sets m from the parking tables.
func (s store) gaugeParking(ctx context.Context, m *parkMetrics) error {
	rows, err := s.pool.Query(ctx, `SELECT k.destination, count(*), coalesce(sum(e.n), 0), extract(epoch FROM now() - min(k.parked_at))
FROM parked_keys k
LEFT JOIN LATERAL (SELECT count(*) AS n FROM parked_events e
  WHERE e.destination = k.destination AND e.provider = k.provider AND e.kafka_key = k.kafka_key) e ON true
GROUP BY k.destination`)
	if err != nil {
		return fmt.Errorf("parking gauges: %w", err)
	}
	type row struct {
		dest         string
		keys, events int64
		age          float64
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		err := r.Scan(&x.dest, &x.keys, &x.events, &x.age)
		return x, err
	})
	if err != nil {
		return fmt.Errorf("parking gauges: %w", err)
	}
	m.keys.Reset()
	m.events.Reset()
	m.oldest.Reset()
	for _, x := range got {
		m.keys.WithLabelValues(x.dest).Set(float64(x.keys))
		m.events.WithLabelValues(x.dest).Set(float64(x.events))
		m.oldest.WithLabelValues(x.dest).Set(x.age)
	}
	return nil
}

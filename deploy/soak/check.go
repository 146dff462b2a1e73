package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// waitFinal waits until every acknowledged event is in the inbox and no
// inbox row is still on its way.
func (s *stack) waitFinal(ctx context.Context, acked map[string]time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var open, total int
	for time.Now().Before(deadline) {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := s.pool.QueryRow(qctx, `SELECT count(*) FILTER (WHERE processing_state <> ALL($1)), count(*) FROM inbox`, schemas.TerminalStates()).Scan(&open, &total)
		cancel()
		if err == nil && open == 0 && total >= len(acked) {
			s.logf("pipeline finished: %d inbox rows final", total)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("after %v, %d of %d inbox rows are not final (%d acknowledged)", limit, open, total, len(acked))
}

// result is the soak's table.
type result struct {
	o          *options
	sendTime   time.Duration
	acked      int
	firsts     int
	dupsSent   int
	attempts   int
	states     map[string]int
	topicRecs  int
	topicIDs   int
	apiCalls   int
	maxAck     time.Duration
	mon        *monitor
	faults     []*fault
	violations []string
}

// check reads the database and the topic and evaluates the invariants.
func (s *stack) check(ctx context.Context, g *generator, faults []*fault, mon *monitor, sendTime time.Duration) (*result, error) {
	acked := g.acked()
	g.mu.Lock()
	r := &result{o: s.o, sendTime: sendTime, acked: len(acked), firsts: g.firsts, dupsSent: g.dupsSent,
		attempts: g.attempts, maxAck: g.maxAck, mon: mon, faults: faults, states: map[string]int{}}
	g.mu.Unlock()
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }

	// 1. Every acknowledged event is in the inbox once and final.
	rows, err := s.pool.Query(ctx, `SELECT event_id, processing_state, processed_at FROM inbox WHERE provider = 'soak'`)
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	state := map[string]string{}
	processed := map[string]time.Time{}
	for rows.Next() {
		var id, st string
		var at *time.Time
		if err := rows.Scan(&id, &st, &at); err != nil {
			return nil, fmt.Errorf("read inbox: %w", err)
		}
		state[id] = st
		r.states[st]++
		if at != nil {
			processed[id] = *at
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	missing, notFinal := 0, 0
	for id := range acked {
		switch st, ok := state[id]; {
		case !ok:
			missing++
		case !schemas.Final(st):
			notFinal++
		}
	}
	if missing > 0 || notFinal > 0 {
		bad("%d acknowledged events missing from the inbox, %d not final or dead", missing, notFinal)
	}
	if extra := len(state) - len(acked); extra != 0 {
		bad("%d inbox rows for %d acknowledged events", len(state), len(acked))
	}

	// 2. At most one effect per event.
	var twice int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM provider_object_changes
		GROUP BY provider, event_id HAVING count(*) > 1) x`).Scan(&twice); err != nil {
		return nil, fmt.Errorf("read effect log: %w", err)
	}
	if twice > 0 {
		bad("%d events have more than one row in the effect log", twice)
	}

	// 3. No stored object older than the newest version the API served.
	served, calls := s.api.newestServed()
	r.apiCalls = calls
	stored := map[string]int{}
	orows, err := s.pool.Query(ctx, `SELECT object_id, version FROM provider_objects WHERE provider = 'soak'`)
	if err != nil {
		return nil, fmt.Errorf("read objects: %w", err)
	}
	for orows.Next() {
		var id string
		var v int
		if err := orows.Scan(&id, &v); err != nil {
			return nil, fmt.Errorf("read objects: %w", err)
		}
		stored[id] = v
	}
	if err := orows.Err(); err != nil {
		return nil, fmt.Errorf("read objects: %w", err)
	}
	older := 0
	for obj, v := range served {
		if stored[obj] < v {
			older++
		}
	}
	if older > 0 {
		bad("%d stored objects are older than the newest version the API served for them", older)
	}

	// Figures: the topic, recovery after each fault.
	if r.topicRecs, r.topicIDs, err = readTopic(ctx, s.kafka.Brokers(), topic); err != nil {
		return nil, err
	}
	if r.topicIDs < len(acked) {
		bad("%d distinct events on the topic for %d acknowledged", r.topicIDs, len(acked))
	}
	firstAfter := sortedAcks(acked)
	for _, f := range faults {
		i := sort.Search(len(firstAfter), func(i int) bool { return !firstAfter[i].at.Before(f.restored) })
		if i < len(firstAfter) {
			if at, ok := processed[firstAfter[i].id]; ok {
				f.recovered = at.Sub(f.at)
			}
		}
		if f.err != nil {
			bad("fault %s %s could not be undone: %v", f.kind, f.target, f.err)
		}
	}
	return r, nil
}

type ack struct {
	id string
	at time.Time
}

func sortedAcks(m map[string]time.Time) []ack {
	out := make([]ack, 0, len(m))
	for id, at := range m {
		out = append(out, ack{id, at})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// readTopic reads topic from the start to its end offsets and counts its
// records and distinct event ids.
func readTopic(ctx context.Context, brokers []string, topic string) (records, distinct int, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	ids := map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for !done() {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("read %s: not at its end offsets after 3 minutes", topic)
		}
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			records++
			next[r.Partition] = r.Offset + 1
			if d, err := schemas.Decode(r); err == nil {
				ids[d.EventID] = true
			}
		})
	}
	return records, len(ids), nil
}

// print writes the invariants table and the figures.
func (r *result) print(w io.Writer) {
	ok := func(b bool) string {
		if b {
			return "holds"
		}
		return "**VIOLATED**"
	}
	fmt.Fprintf(w, "## Chaos soak\n\n%d objects × %d versions = %d events at %.0f/s offered, %.0f%% re-sent, %.0f%% sent before their predecessor; faults every ~%v; sending took %v.\n\n",
		r.o.objects, r.o.perObject, r.o.objects*r.o.perObject, r.o.rate, r.o.dupRatio*100, r.o.swapRatio*100, r.o.faultEvery, r.sendTime.Round(time.Second))
	t := benchenv.NewTable(w, "invariant", "result")
	joined := strings.Join(r.violations, "; ")
	t.Rowf("every 2xx-acknowledged event is in the inbox once and final | %s", ok(!strings.Contains(joined, "inbox")))
	t.Rowf("the effect log has at most one row per event | %s", ok(!strings.Contains(joined, "effect log")))
	t.Rowf("no stored object is older than the newest version the API served | %s", ok(!strings.Contains(joined, "older than")))
	t.Rowf("every acknowledged event reached the topic | %s", ok(!strings.Contains(joined, "on the topic")))
	fmt.Fprintln(w)
	t = benchenv.NewTable(w, "figure", "value")
	t.Rowf("events acknowledged (first sends + re-sent duplicates, HTTP attempts) | %d (%d + %d, %d attempts)", r.acked, r.firsts, r.dupsSent, r.attempts)
	t.Rowf("final states | %v", r.states)
	t.Rowf("records on the topic / distinct events (duplicates) | %d / %d (%d)", r.topicRecs, r.topicIDs, r.topicRecs-r.topicIDs)
	t.Rowf("provider API calls | %d", r.apiCalls)
	t.Rowf("max queue age: receiver (first attempt → 2xx) | %v", r.maxAck.Round(time.Millisecond))
	t.Rowf("max queue age: outbox (oldest unpublished row) | %v", r.mon.outboxAge.Round(time.Millisecond))
	t.Rowf("max slot lag | %d kB", r.mon.slotLagBytes/1024)
	t.Rowf("max queue age: consumers (oldest acknowledged event not final) | %v", r.mon.inboxAge.Round(time.Millisecond))
	t.Rowf("max events waiting on retry topics | %d", r.mon.retrying)
	fmt.Fprintln(w)
	t = benchenv.NewTable(w, "#>", "fault", "target", "back after>", "recovered after (fault → next acknowledged event final)>")
	for i, f := range r.faults {
		rec := "–"
		if f.recovered > 0 {
			rec = f.recovered.Round(10 * time.Millisecond).String()
		}
		t.Rowf("%d | %s | %s | %v | %s", i+1, f.kind, f.target, f.restored.Sub(f.at).Round(10*time.Millisecond), rec)
	}
	fmt.Fprintln(w)
	if len(r.violations) > 0 {
		fmt.Fprintf(w, "Violations: %s\n", joined)
	}
}

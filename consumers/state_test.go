package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas"
)

// Every processing_state transition of the documented state machine, on
// the real inbox table.
func TestStateTransitions(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := store{pool: pool}
	w, err := inbox.NewWriter(pool, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	events := map[string]*event.Event{}
	add := func(id string) *event.Event {
		body, _ := json.Marshal(map[string]any{"id": id, "type": "payment.succeeded", "data": map[string]any{"payment_id": "p_" + id}})
		if _, err := w.Write(ctx, inbox.Record{Provider: "ref", EventID: id, Type: "payment.succeeded", Payload: body,
			SecretID: "s", AggregateID: "p_" + id, Topic: "t"}); err != nil {
			t.Fatal(err)
		}
		events[id] = &event.Event{Provider: "ref", ID: id, Type: "payment.succeeded"}
		return events[id]
	}
	state := func(id string) (string, int) {
		var st string
		var n int32
		if err := pool.QueryRow(ctx, `SELECT processing_state, attempts FROM inbox WHERE provider='ref' AND event_id=$1`, id).Scan(&st, &n); err != nil {
			t.Fatal(err)
		}
		return st, int(n)
	}
	expect := func(id, want string, attempts int) {
		t.Helper()
		if st, n := state(id); st != want || n != attempts {
			t.Fatalf("%s: state %s attempts %d, want %s %d", id, st, n, want, attempts)
		}
	}
	claim := func(id, wantPrev string) {
		t.Helper()
		prev, _, err := s.claim(ctx, events[id])
		if err != nil || prev != wantPrev {
			t.Fatalf("claim %s: prev %q err %v, want prev %q", id, prev, err, wantPrev)
		}
	}
	eff := func(obj string, v int64) *event.Effect {
		return &event.Effect{ObjectType: "payment", ObjectID: obj, Version: v, Data: json.RawMessage(`{"v":1}`)}
	}
	apply := func(ev *event.Event, e *event.Effect, want string) {
		t.Helper()
		got, err := s.apply(ctx, ev, e)
		if err != nil || got != want {
			t.Fatalf("apply %s: %q %v, want %q", ev.ID, got, err, want)
		}
	}

	// pending → processing → succeeded
	a := add("a")
	expect("a", schemas.StatePending, 0)
	claim("a", schemas.StatePending)
	expect("a", schemas.StateProcessing, 1)
	apply(a, eff("obj", 2), OutcomeOK)
	expect("a", schemas.StateSucceeded, 1)
	// succeeded is final: a second claim changes nothing, a second apply is a duplicate.
	claim("a", schemas.StateSucceeded)
	expect("a", schemas.StateSucceeded, 1)
	apply(a, eff("obj", 3), OutcomeDuplicate)
	expect("a", schemas.StateSucceeded, 1)

	// processing → retrying → processing → ignored_stale
	b := add("b")
	claim("b", schemas.StatePending)
	next := time.Now().Add(time.Minute)
	if err := s.fail(ctx, "ref", "b", receivedAt(b), schemas.StateRetrying, event.ClassTransient, "503", &next); err != nil {
		t.Fatal(err)
	}
	expect("b", schemas.StateRetrying, 1)
	claim("b", schemas.StateRetrying)
	expect("b", schemas.StateProcessing, 2)
	apply(b, eff("obj", 2), OutcomeStale)
	expect("b", schemas.StateIgnoredStale, 2)

	// processing → dead → (replay) pending → processing → skipped
	c := add("c")
	claim("c", schemas.StatePending)
	if err := s.fail(ctx, "ref", "c", nil, schemas.StateDead, event.ClassPermanent, "404", nil); err != nil {
		t.Fatal(err)
	}
	expect("c", schemas.StateDead, 1)
	target := admin.ReplayTarget{Topic: "t", AggregateIDPath: []string{"data.payment_id"}}
	if _, err := admin.Replay(ctx, pool, target, admin.ReplayRequest{Provider: "ref", EventID: "c", RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	expect("c", schemas.StatePending, 0)
	claim("c", schemas.StatePending)
	apply(c, nil, OutcomeSkipped)
	expect("c", schemas.StateSkipped, 1)

	// A late failure of a duplicate copy never downgrades a final state.
	if err := s.fail(ctx, "ref", "a", receivedAt(a), schemas.StateDead, event.ClassTransient, "late", nil); err != nil {
		t.Fatal(err)
	}
	expect("a", schemas.StateSucceeded, 1)

	// succeeded → (replay --force) pending: the handler runs again, the
	// version guard still decides.
	if _, err := admin.Replay(ctx, pool, target, admin.ReplayRequest{Provider: "ref", EventID: "a"}); !errors.Is(err, admin.ErrNotReplayable) {
		t.Fatalf("replay without force: %v", err)
	}
	if _, err := admin.Replay(ctx, pool, target, admin.ReplayRequest{Provider: "ref", EventID: "a", Force: true, RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	expect("a", schemas.StatePending, 0)
	claim("a", schemas.StatePending)
	apply(a, eff("obj", 5), OutcomeOK)
	expect("a", schemas.StateSucceeded, 1)

	// No verified inbox row: errNoInbox.
	if _, _, err := s.claim(ctx, &event.Event{Provider: "ref", ID: "unknown"}); !errors.Is(err, errNoInbox) {
		t.Fatalf("claim unknown: %v", err)
	}
	// The check constraint refuses states outside the machine.
	if _, err := pool.Exec(ctx, `UPDATE inbox SET processing_state = 'done' WHERE event_id = 'a'`); err == nil {
		t.Fatal("inbox accepted an undocumented state")
	}
	var changes, replays int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM provider_object_changes`).Scan(&changes)
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM replays`).Scan(&replays)
	if changes != 2 || replays != 2 {
		t.Fatalf("changes %d replays %d, want 2 and 2", changes, replays)
	}
}

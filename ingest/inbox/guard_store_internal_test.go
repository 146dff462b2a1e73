package inbox

import (
	"context"
	"testing"
	"time"
)

// The replay guard never answers for an event it did not store (issue 45,
// finding 4): content C is stored only under an id whose event holds C.

func guarded(id, content string) *pending {
	return &pending{done: make(chan struct{}), rec: Record{Provider: "p", EventID: id, Type: "t", Payload: []byte(`{"id":"` + id + `"}`),
		SecretID: "s", AggregateID: "a", Topic: "topic", Guard: GuardKey{Key: []byte(content), TTL: time.Hour}}}
}

// Within one batch: (C, X) is a duplicate by id of an X stored with other
// content D; the genuine (C, Z) beside it must be stored, not answered as
// a duplicate of X (which does not hold C).
func TestGuardInBatchDoesNotInheritAnotherIDsDuplicate(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	w.flush([]*pending{guarded("X", "D")})
	cx, cz := guarded("X", "C"), guarded("Z", "C")
	w.flush([]*pending{cx, cz})
	if cx.err != nil || cz.err != nil {
		t.Fatal(cx.err, cz.err)
	}
	if cx.out.New {
		t.Errorf("(C, X): new, want a duplicate of the stored X")
	}
	if !cz.out.New || cz.out.DuplicateOf != "" {
		t.Errorf("(C, Z): new=%v duplicate of %q; want new (C was never stored)", cz.out.New, cz.out.DuplicateOf)
	}
	var n int
	if err := base.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE event_id = 'Z'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("inbox rows of Z: %d (%v), want 1", n, err)
	}
	// C's record is Z's now: the same content again under a third id is Z's duplicate.
	cy := guarded("Y", "C")
	w.flush([]*pending{cy})
	if cy.out.New || cy.out.DuplicateOf != "Z" {
		t.Errorf("(C, Y): new=%v duplicate of %q, want a duplicate of Z", cy.out.New, cy.out.DuplicateOf)
	}
}

// Across batches: (C, X) and (D, X) race. (D, X) commits X while (C, X)
// waits on X's key; (C, X) loses, and must leave no guard record that
// would answer a later (C, Z) as a duplicate of X.
func TestGuardOfALostKeyRaceIsNotRecorded(t *testing.T) {
	ctx := context.Background()
	base, w := newTestWriter(t, 0)
	tx, err := base.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	// (D, X)'s statement, in flight: X's key is written, not committed.
	if _, err := tx.Exec(ctx, `INSERT INTO dedupe_keys (provider, event_id, gen)
		SELECT 'p', 'X', starts FROM storage_partitions WHERE parent = 'dedupe_keys' AND starts <= now() AND ends > now()`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id) VALUES ('p', 'X', 't', '{}', true, 's')`); err != nil {
		t.Fatal(err)
	}
	cx := guarded("X", "C")
	done := make(chan struct{})
	go func() { w.flush([]*pending{cx}); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for waiting := 0; waiting == 0; { // (C, X) waits on X's key
		if time.Now().After(deadline) {
			t.Fatal("the write never waited on the key")
		}
		if err := base.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if cx.err != nil || cx.out.New {
		t.Fatalf("(C, X): new=%v err=%v; want a duplicate of the X that won", cx.out.New, cx.err)
	}
	cz := guarded("Z", "C")
	w.flush([]*pending{cz})
	if cz.err != nil || !cz.out.New {
		t.Errorf("(C, Z): new=%v duplicate of %q err=%v; want new (C was never stored)", cz.out.New, cz.out.DuplicateOf, cz.err)
	}
}

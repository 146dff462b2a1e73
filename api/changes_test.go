package api_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestChangesOfAnEventAreFoundThroughItsObject: the event page's effect
// log is the event's own change rows (found through the object its
// processed_events row names), not another event's change of the same
// object, and none for an event that changed nothing.
func TestChangesOfAnEventAreFoundThroughItsObject(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, q := range []string{
		`INSERT INTO processed_events (provider, event_id, outcome, object_id, version) VALUES
  ('stripe', 'evt_a', 'succeeded', 'pi_1', 1), ('stripe', 'evt_b', 'succeeded', 'pi_1', 2),
  ('stripe', 'evt_c', 'ignored_stale', 'pi_1', 1), ('github', 'evt_a', 'succeeded', 'pi_1', 5)`,
		`INSERT INTO provider_object_changes (provider, object_id, event_id, event_type, old_version, new_version) VALUES
  ('stripe', 'pi_1', 'evt_a', 't', NULL, 1), ('stripe', 'pi_1', 'evt_b', 't', 1, 2), ('github', 'pi_1', 'evt_a', 't', NULL, 5)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ib := api.Inbox{Pool: pool}
	got, err := ib.Changes(ctx, "stripe", "evt_b")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ObjectID != "pi_1" || got[0].NewVersion != 2 || got[0].OldVersion == nil || *got[0].OldVersion != 1 {
		t.Fatalf("changes of evt_b = %+v, want the one change 1 -> 2 of pi_1", got)
	}
	if got, err := ib.Changes(ctx, "stripe", "evt_c"); err != nil || len(got) != 0 {
		t.Fatalf("changes of a stale event = %+v, %v; want none", got, err)
	}
	if got, err := ib.Changes(ctx, "github", "evt_a"); err != nil || len(got) != 1 || got[0].NewVersion != 5 {
		t.Fatalf("changes of github's evt_a = %+v, %v; want its own", got, err)
	}
}

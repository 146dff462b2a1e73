package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestIssueReplayConcurrentReplaysEachEventOnce: two replays of one issue
// at once (an operator's double click, two consoles) re-enqueue each of
// its dead events once: one outbox row and one replays row per event; the
// events one call found replayed by the other are listed as skipped.
func TestIssueReplayConcurrentReplaysEachEventOnce(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	ctx := context.Background()
	const n = 150
	var ids []string
	base := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("dead_%03d", i)
		ids = append(ids, id)
		payload := fmt.Sprintf(`{"id":%q,"type":"payment.succeeded","created_at":"2026-01-01T00:00:00Z","data":{"payment_id":"pay_d%d"}}`, id, i)
		if _, err := f.pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, received_at, verified, secret_id, processing_state, attempts, last_error)
VALUES ('acme', $1, 'payment.succeeded', $2, $3, true, 'secret1', 'dead', 4, 'boom')`, id, payload, base.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	var issue int64
	if err := f.pool.QueryRow(ctx, `INSERT INTO failure_issues (provider, stage, fingerprint, error_class, message, last_error, event_count, failures)
VALUES ('acme', 'fetch', 'cafe', 'permanent', 'fetch: status <n>', 'fetch: status 404', $1, $1) RETURNING id`, n).Scan(&issue); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at)
SELECT $1, provider, event_id, received_at FROM inbox WHERE provider = 'acme' AND event_id = ANY($2)`, issue, ids); err != nil {
		t.Fatal(err)
	}
	op := f.token("dave", "events:read events:replay", "roles", []string{"gatehouse:operator"})
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		answers [2]answer
	)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = f.do(http.MethodPost, fmt.Sprintf("/api/v1/issues/%d/replay", issue), strings.NewReader(""),
				"Authorization", "Bearer "+op)
		}()
	}
	close(start)
	wg.Wait()
	replayed, skipped := 0, 0
	for _, a := range answers {
		if a.status != http.StatusAccepted {
			t.Fatalf("replay: %d %s", a.status, a.raw)
		}
		r, _ := a.body["replayed"].([]any)
		s, _ := a.body["skipped"].([]any)
		replayed, skipped = replayed+len(r), skipped+len(s)
	}
	var outboxRows, replayRows, twice int
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox WHERE event_id = ANY($1)),
  (SELECT count(*) FROM replays WHERE event_id = ANY($1)),
  (SELECT count(*) FROM (SELECT event_id FROM replays WHERE event_id = ANY($1) GROUP BY event_id HAVING count(*) > 1) d)`, ids).
		Scan(&outboxRows, &replayRows, &twice); err != nil {
		t.Fatal(err)
	}
	t.Logf("replayed %d, skipped %d across the two calls", replayed, skipped)
	if outboxRows != n || replayRows != n || twice != 0 || replayed != n {
		t.Fatalf("%d outbox rows, %d replays rows (%d events replayed twice), %d answered replayed; want %d, %d, 0, %d",
			outboxRows, replayRows, twice, replayed, n, n, n)
	}
	a := f.bearerGet(fmt.Sprintf("/api/v1/issues/%d", issue), op)
	if a.body["replayed_events"] != float64(n) {
		t.Fatalf("issue after two replays: %s, want replayed_events %d", a.raw, n)
	}
}

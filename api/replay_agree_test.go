package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestReplayUnconfiguredProvider: an event of a provider that is no longer
// configured is refused (409 naming the cause, nothing enqueued), exactly as `gatehouse
// replay` refuses it (cmd/gatehouse's TestBinaryConsumeAndReplay): both go
// through admin.ReplayTargetFor.
func TestReplayUnconfiguredProvider(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `INSERT INTO inbox (provider, event_id, event_type, payload, verified, secret_id, processing_state)
VALUES ('retired', 'evt_r', 'payment.succeeded', '{"id":"evt_r"}', true, 'secret1', 'dead')`); err != nil {
		t.Fatal(err)
	}
	op := f.token("dave", "events:replay", "roles", []string{"gatehouse:operator"})
	a := f.do(http.MethodPost, "/api/v1/events/retired/evt_r/replay", nil, "Authorization", "Bearer "+op)
	if a.status != http.StatusConflict || !strings.Contains(a.raw, "provider is not configured") {
		t.Fatalf("replay of an unconfigured provider's event: %d %s", a.status, a.raw)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE event_id = 'evt_r'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("outbox rows for the refused replay: %d %v", n, err)
	}
}

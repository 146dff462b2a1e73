package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/deploy/bench/benchenv"
)

// apiTiming is one list query of the API and the console
// (api.Inbox.ListEvents): its first page and a deep keyset page (a cursor
// o.days/2 days back), each timed -api-samples times, and the last of
// each page.
type apiTiming struct {
	name string
	f    api.EventFilter
	lat  [2]*benchenv.Hist
	page [2]api.EventPage
}

// apiBench times the read model's pages on the history store (50 a page,
// as the console), every case interleaved with the others.
func apiBench(ctx context.Context, pool *pgxpool.Pool, o options) ([]apiTiming, error) {
	var deep api.EventCursor
	err := pool.QueryRow(ctx, `SELECT received_at, provider, event_id FROM inbox WHERE received_at < now() - make_interval(days => $1)
ORDER BY received_at DESC, provider DESC, event_id DESC LIMIT 1`, o.days/2).Scan(&deep.ReceivedAt, &deep.Provider, &deep.EventID)
	if err != nil {
		return nil, fmt.Errorf("deep cursor: %w", err)
	}
	var someID, someProvider string
	// The oldest event left (the retention passes before this dropped the
	// oldest days).
	if err := pool.QueryRow(ctx, `SELECT provider, event_id FROM inbox ORDER BY received_at LIMIT 1`).Scan(&someProvider, &someID); err != nil {
		return nil, fmt.Errorf("an old event: %w", err)
	}
	month := time.Now().AddDate(0, 0, -o.days-1)
	ts := []apiTiming{
		{name: "no filter"},
		{name: "processing_state=dead (indexed)", f: api.EventFilter{State: "dead"}},
		{name: "since 30 days ago (indexed)", f: api.EventFilter{Since: &month}},
		{name: "provider+event_id (indexed)", f: api.EventFilter{Provider: someProvider, EventID: someID}},
		{name: "provider=stripe (70 %, scan)", f: api.EventFilter{Provider: "stripe"}},
		{name: "provider=hubspot (1 %, scan)", f: api.EventFilter{Provider: "hubspot"}},
		{name: "type=charge.dispute.created (0.07 %, scan)", f: api.EventFilter{Type: "charge.dispute.created"}},
		{name: "type=charge.dispute.created since 30 days ago", f: api.EventFilter{Type: "charge.dispute.created", Since: &month}},
		{name: "event_id alone (scan)", f: api.EventFilter{EventID: someID}},
	}
	ib := api.Inbox{Pool: pool}
	for range o.apiSamples {
		for i := range ts {
			t := &ts[i]
			for k, cur := range []*api.EventCursor{nil, &deep} {
				if t.lat[k] == nil {
					t.lat[k] = benchenv.NewHist()
				}
				start := time.Now()
				p, err := ib.ListEvents(ctx, t.f, cur, 50)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", t.name, err)
				}
				t.lat[k].Record(time.Since(start))
				t.page[k] = p
			}
		}
	}
	return ts, nil
}

func reportAPI(w io.Writer, o options, ts []apiTiming) {
	fmt.Fprintf(w, "\n### API and console pages on the history store\n\n")
	fmt.Fprintf(w, "`api.Inbox.ListEvents` (the read model of `GET /api/v1/events` and the console's events page), 50 a page, on the history store after the runs above; a deep page starts at a keyset cursor %d days back. Median (worst) of %d interleaved samples; target ≤ 200 ms. A scan filter reads at most %d rows a page and, without since/until, only the last 24 h (window).\n\n",
		o.days/2, o.apiSamples, api.ScanBudget)
	tb := benchenv.NewTable(w, "query", "first page ms", "rows", "deep page ms", "rows")
	cells := []any{}
	for _, t := range ts {
		cells = append(cells[:0], t.name)
		for k, p := range t.page {
			rows := fmt.Sprint(len(p.Events))
			if p.Window != nil {
				rows += ", window"
			}
			if p.Partial {
				rows += ", partial"
			}
			cells = append(cells, fmt.Sprintf("%s (%s)", ms(t.lat[k].Q(0.5)), ms(t.lat[k].Q(1))), rows)
		}
		tb.Row(cells...)
	}
}

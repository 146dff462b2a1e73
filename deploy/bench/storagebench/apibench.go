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

// apiCase is one list query of the API and the console (api.Inbox.ListEvents).
type apiCase struct {
	name string
	f    api.EventFilter
}

// apiTiming is a case's first page and a deep keyset page (a cursor
// o.days/2 days back), median and worst of -api-samples each.
type apiTiming struct {
	c                    apiCase
	first, deep          *benchenv.Hist
	firstRows, deepRows  int
	firstPart, deepPart  bool
	firstWindow, deepWin bool
}

// apiBench times the read model's pages on the history store (50 a page,
// as the console), every case interleaved with the others.
func apiBench(ctx context.Context, pool *pgxpool.Pool, o options) ([]apiTiming, error) {
	ib := api.Inbox{Pool: pool}
	var deep api.EventCursor
	err := pool.QueryRow(ctx, `SELECT received_at, provider, event_id FROM inbox WHERE received_at < now() - make_interval(days => $1)
ORDER BY received_at DESC, provider DESC, event_id DESC LIMIT 1`, o.days/2).Scan(&deep.ReceivedAt, &deep.Provider, &deep.EventID)
	if err != nil {
		return nil, fmt.Errorf("deep cursor: %w", err)
	}
	var someID, someProvider string
	// The oldest event left (the retention passes before this dropped the
	// oldest days).
	if err := pool.QueryRow(ctx, `SELECT provider, event_id FROM inbox ORDER BY received_at LIMIT 1`).
		Scan(&someProvider, &someID); err != nil {
		return nil, fmt.Errorf("an old event: %w", err)
	}
	month := time.Now().AddDate(0, 0, -o.days-1)
	cases := []apiCase{
		{"no filter", api.EventFilter{}},
		{"processing_state=dead (indexed)", api.EventFilter{State: "dead"}},
		{"since 30 days ago (indexed)", api.EventFilter{Since: &month}},
		{"provider+event_id (indexed)", api.EventFilter{Provider: someProvider, EventID: someID}},
		{"provider=stripe (70 %, scan)", api.EventFilter{Provider: "stripe"}},
		{"provider=hubspot (1 %, scan)", api.EventFilter{Provider: "hubspot"}},
		{"type=charge.dispute.created (0.07 %, scan)", api.EventFilter{Type: "charge.dispute.created"}},
		{"type=charge.dispute.created since 30 days ago", api.EventFilter{Type: "charge.dispute.created", Since: &month}},
		{"event_id alone (scan)", api.EventFilter{EventID: someID}},
	}
	out := make([]apiTiming, len(cases))
	for i := range out {
		out[i] = apiTiming{c: cases[i], first: benchenv.NewHist(), deep: benchenv.NewHist()}
	}
	for range o.apiSamples {
		for i, c := range cases {
			t := time.Now()
			p, err := ib.ListEvents(ctx, c.f, nil, 50)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			out[i].first.Record(time.Since(t))
			out[i].firstRows, out[i].firstPart, out[i].firstWindow = len(p.Events), p.Partial, p.Window != nil
			cur := deep
			t = time.Now()
			p, err = ib.ListEvents(ctx, c.f, &cur, 50)
			if err != nil {
				return nil, fmt.Errorf("%s, deep: %w", c.name, err)
			}
			out[i].deep.Record(time.Since(t))
			out[i].deepRows, out[i].deepPart, out[i].deepWin = len(p.Events), p.Partial, p.Window != nil
		}
	}
	return out, nil
}

func reportAPI(w io.Writer, o options, ts []apiTiming) {
	fmt.Fprintf(w, "\n### API and console pages on the history store\n\n")
	fmt.Fprintf(w, "`api.Inbox.ListEvents` (the read model of `GET /api/v1/events` and the console's events page), 50 a page, on the history store after the runs above; a deep page starts at a keyset cursor %d days back. Median (worst) of %d interleaved samples; target ≤ 200 ms. A scan filter reads at most %d rows a page and, without since/until, only the last 24 h (window).\n\n",
		o.days/2, o.apiSamples, api.ScanBudget)
	tb := benchenv.NewTable(w, "query", "first page ms", "rows", "deep page ms", "rows")
	for _, t := range ts {
		tb.Rowf("%s | %s (%s) | %d%s | %s (%s) | %d%s", t.c.name, ms(t.first.Q(0.5)), ms(t.first.Q(1)), t.firstRows, flags(t.firstPart, t.firstWindow),
			ms(t.deep.Q(0.5)), ms(t.deep.Q(1)), t.deepRows, flags(t.deepPart, t.deepWin))
	}
}

func flags(partial, window bool) string {
	s := ""
	if window {
		s += ", window"
	}
	if partial {
		s += ", partial"
	}
	return s
}

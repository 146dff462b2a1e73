package api

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// issuesOpen is gatehouse_issues_open{provider,stage}: the failure issues
// in status open, read from failure_issues at each scrape (a pair with no
// open issue is absent). Acknowledged, resolved and muted issues do not
// count, so acknowledging an issue ends its alert.
type issuesOpen struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
}

// NewIssuesOpenCollector returns the collector of gatehouse_issues_open
// (cmd/gatehouse registers it in every process serving the public
// surface, whether or not the API is mounted). A scrape whose query fails
// or takes over 2 s exports nothing for it.
func NewIssuesOpenCollector(pool *pgxpool.Pool) prometheus.Collector {
	return &issuesOpen{pool: pool, desc: prometheus.NewDesc("gatehouse_issues_open",
		"Failure issues in status open, by provider and stage (fetch, forward:<destination>, apply).", []string{"provider", "stage"}, nil)}
}

func (c *issuesOpen) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *issuesOpen) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.pool.Query(ctx, `SELECT provider, stage, count(*) FROM failure_issues WHERE status = 'open' GROUP BY provider, stage`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var provider, stage string
		var n int64
		if rows.Scan(&provider, &stage, &n) != nil {
			return
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), provider, stage)
	}
}

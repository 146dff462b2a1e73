package api

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// The quantile of bucket counts interpolates within its bucket, as
// Prometheus's histogram_quantile does.
func TestQuantileOfAckBuckets(t *testing.T) {
	counts := make([]float64, 13)
	counts[3] = 50 // ≤ 5 ms (from 2 ms)
	counts[6] = 50 // ≤ 50 ms (from 20 ms)
	if got := quantile(counts, 0.5); math.Abs(got-0.005) > 1e-9 {
		t.Errorf("p50 = %v, want 0.005 (the top of the first bucket)", got)
	}
	if got := quantile(counts, 0.99); math.Abs(got-(0.02+0.03*49/50)) > 1e-9 {
		t.Errorf("p99 = %v, want %v", got, 0.02+0.03*49/50)
	}
	if !math.IsNaN(quantile(make([]float64, 13), 0.5)) {
		t.Error("no answers: want NaN")
	}
	counts = make([]float64, 13)
	counts[12] = 1
	if got := quantile(counts, 0.99); got != 2.5 {
		t.Errorf("past the last bound: %v, want 2.5", got)
	}
}

// BenchmarkCharts measures the console's charts read (both ranges, as the
// page does) over 48 hours of pipeline_minutes for 27 providers (the
// table's size at its retention): go test -run XXX -bench Charts ./api/
func BenchmarkCharts(b *testing.B) {
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `INSERT INTO pipeline_minutes (provider, minute, accepted, duplicate, rejected, refused, ack_buckets, relay_age_s, consume_age_s)
SELECT CASE WHEN p = 0 THEN '' ELSE 'p' || p END, date_trunc('minute', now()) - make_interval(mins => m), 60, 1, 0, 0,
  ARRAY[0,0,5,40,10,3,1,0,0,0,0,0,0], CASE WHEN p = 0 THEN 0.5 END, CASE WHEN p = 0 THEN 2 END
FROM generate_series(0, 27) p, generate_series(0, 48 * 60 - 1) m`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `ANALYZE pipeline_minutes`); err != nil {
		b.Fatal(err)
	}
	ib := Inbox{Pool: pool}
	for _, provider := range []string{"p7", ""} {
		name := "one provider"
		if provider == "" {
			name = "every provider"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, r := range []struct{ span, step time.Duration }{{time.Hour, time.Minute}, {24 * time.Hour, 10 * time.Minute}} {
					if _, err := ib.Charts(context.Background(), provider, r.span, r.step); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

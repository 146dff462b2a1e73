package consumers

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/fetch"
)

// New with only the required fields (brokers, topics, pool and the
// consumers section's settings) does not panic: nil Logger means
// slog.Default(), nil Registerer means unregistered metrics;
// fetch.NewAPIClient and fetch.NewMetrics(nil, nil) likewise. A setting
// left zero is a clear error, not a second default (the configuration's
// schema holds the defaults).
func TestNewZeroConfig(t *testing.T) {
	c := Config{Brokers: []string{"127.0.0.1:1"}, Topics: map[string]string{"p": "t"}, Pool: &pgxpool.Pool{},
		Group: "g", RetryDelays: []time.Duration{time.Second}, Concurrency: 1, MaxPollRecords: 1, DrainTimeout: time.Second, SessionTimeout: time.Second}
	if _, err := New(c); err != nil {
		t.Fatal(err)
	}
	c.MaxPollRecords = 0
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "MaxPollRecords") {
		t.Fatalf("a zero MaxPollRecords: %v, want an error naming it", err)
	}
	if _, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	_ = fetch.NewMetrics(nil, nil)
}

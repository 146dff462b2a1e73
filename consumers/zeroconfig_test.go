package consumers

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/fetch"
)

// New with only the required fields (brokers, topics, pool) does not panic:
// nil Logger means slog.Default(), nil Registerer means unregistered
// metrics; fetch.NewAPIClient and fetch.NewMetrics(nil, nil) likewise.
func TestNewZeroConfig(t *testing.T) {
	if _, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Topics: map[string]string{"p": "t"}, Pool: &pgxpool.Pool{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	_ = fetch.NewMetrics(nil, nil)
}

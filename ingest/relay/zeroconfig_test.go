package relay

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// New with only the required fields (pool, database URL, brokers) does not
// panic: nil Logger means slog.Default(), nil Registerer means unregistered
// metrics. No connection is made.
func TestNewZeroConfig(t *testing.T) {
	r, err := New(Config{Pool: &pgxpool.Pool{}, DatabaseURL: "postgres://127.0.0.1:1/x", Kafka: Kafka{Brokers: []string{"127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

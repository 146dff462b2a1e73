package consumers

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/internal/settings"
)

// New with only the required fields (brokers, topics, pool) does not
// panic: nil Logger means slog.Default(), nil Registerer means
// unregistered metrics; fetch.NewAPIClient and fetch.NewMetrics(nil, nil)
// likewise. The consumers section's settings left zero take the defaults
// declared once in internal/settings (the ones the configuration's schema
// prints), and a setting out of range is an error naming its key.
func TestNewZeroConfig(t *testing.T) {
	c := Config{Brokers: []string{"127.0.0.1:1"}, Topics: map[string]string{"p": "t"}, Pool: &pgxpool.Pool{}}
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var want settings.Consumers
	want.ApplyDefaults()
	if got := r.cfg.Consumers; got.Group != want.Group || got.MaxPollRecords != want.MaxPollRecords ||
		got.SessionTimeout != want.SessionTimeout || len(got.RetryDelays) != len(want.RetryDelays) {
		t.Errorf("zero settings became %+v, want the defaults %+v", got, want)
	}
	c.SessionTimeout = time.Second
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "consumers.session_timeout") {
		t.Fatalf("a 1s session timeout: %v, want an error naming consumers.session_timeout", err)
	}
	if _, err := fetch.NewAPIClient(fetch.APIClientConfig{BaseURL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	_ = fetch.NewMetrics(nil, nil)
}

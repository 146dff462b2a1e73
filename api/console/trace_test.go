package console

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/internal/testenv"
)

// TestEventPageShowsTrace: the event page shows the trace id of the
// delivery that recorded the event, linked to the trace viewer when
// TraceURL (tracing.ui_url) is set, and nothing for an untraced event.
func TestEventPageShowsTrace(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	insertEvent(t, pool, "demo", "evt_traced", "dead", `{"id":"evt_traced"}`)
	insertEvent(t, pool, "demo", "evt_plain", "dead", `{"id":"evt_plain"}`)
	if _, err := pool.Exec(context.Background(), `UPDATE inbox SET traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' WHERE event_id = 'evt_traced'`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ traceURL, want string }{
		{"", `<code id="trace">4bf92f3577b34da6a3ce929d0e0e4736</code>`},
		{"http://jaeger.test:16686/trace/{trace_id}", `<a href="http://jaeger.test:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736" id="trace">`},
	} {
		con, err := New(Config{Pool: pool, Sessions: headerSessions{}, Operators: []api.User{operator}, TraceURL: c.traceURL})
		if err != nil {
			t.Fatal(err)
		}
		r := chi.NewRouter()
		con.Routes(r)
		srv := httptest.NewServer(r)
		code, _, body := get(t, srv, "/console/events/demo/evt_traced", operator.Subject)
		if code != 200 || !strings.Contains(body, c.want) {
			t.Errorf("ui_url %q: %d, page lacks %s", c.traceURL, code, c.want)
		}
		if _, _, body := get(t, srv, "/console/events/demo/evt_plain", operator.Subject); strings.Contains(body, `id="trace"`) {
			t.Error("an untraced event shows a trace")
		}
		srv.Close()
	}
}

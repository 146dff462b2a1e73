package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// DefaultReadTimeout bounds an API read request unless Config.ReadTimeout
// says otherwise: the api section's default (api.read_timeout).
const DefaultReadTimeout = settings.DefaultReadTimeout

// errReadTimeout is the cause of a read request's context when its
// ReadTimeout runs out.
var errReadTimeout = errors.New("api: read timeout")

// boundReads gives a read request (GET, HEAD, and the payload search,
// POST /events/search, a read whose filters travel in its body) a context that ends after
// ReadTimeout. A query still running then is cancelled on the server (pgx
// sends PostgreSQL a cancel request when a query's context ends) and the
// answer is 503 temporarily_unavailable with Retry-After (writeError), so
// no read holds a connection and a backend for longer, whatever it asks.
func (s *Server) boundReads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !isSearch(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeoutCause(r.Context(), s.cfg.ReadTimeout, fmt.Errorf("%w (%s)", errReadTimeout, s.cfg.ReadTimeout))
		defer cancel()
		next.ServeHTTP(w, r.WithContext(withReadTimeout(ctx, s.cfg.ReadTimeout)))
	})
}

type readTimeoutKey struct{}

func withReadTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, readTimeoutKey{}, d)
}

// readTimeoutOf is the ReadTimeout of r when err ended r because it ran
// out (the context's deadline, or PostgreSQL's query_canceled answer to
// the cancel pgx sent), else 0.
func readTimeoutOf(r *http.Request, err error) time.Duration {
	d, ok := r.Context().Value(readTimeoutKey{}).(time.Duration)
	if !ok || !errors.Is(context.Cause(r.Context()), errReadTimeout) {
		return 0
	}
	var pe *pgconn.PgError
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &pe) && pe.Code == "57014") || pgconn.Timeout(err) {
		return d
	}
	return 0
}

// writeReadTimeout answers a read that ran out of its ReadTimeout.
func writeReadTimeout(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable",
		fmt.Sprintf("the query ran longer than the API's read timeout (%s, api.read_timeout) and was cancelled: "+
			"narrow it (since and until, provider, event_id) or retry later", d))
}

// isSearch reports the payload search, a read sent as a POST.
func isSearch(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events/search")
}

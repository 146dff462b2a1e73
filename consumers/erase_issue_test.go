package consumers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/consumers/fetch"
	"github.com/gatehouse/gatehouse/consumers/forward"
	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/schemas"
)

// TestIssueSummaryKeepsNoPayloadText: what a failure issue keeps of an
// error (FailureSummary) is its class, never the text a payload, a remote
// answer or a script supplied: a forward's answer body, a fetch's path and
// body, a transform's exception.
func TestIssueSummaryKeepsNoPayloadText(t *testing.T) {
	const secret = "zoe.issue@example.org"
	timeout := fmt.Errorf("provider api GET /v1/customers/%s: timeout: %w", secret, context.DeadlineExceeded)
	cases := []struct {
		err  error
		want string
	}{
		{event.InStage("forward:https://team.example", &forward.Error{Status: 400, Dest: "https://team.example/hook", Body: `{"bad":"` + secret + `"}`}),
			"forward to https://team.example/hook: status 400"},
		{event.Permanent(&forward.TransformError{Dest: "https://team.example/hook", Err: errors.New("TypeError: " + secret + " is not a function")}),
			"forward to https://team.example/hook: transform failed"},
		{event.Permanent(&fetch.APIError{Status: 404, Path: "/v1/customers/" + secret, Body: secret}), "provider api GET: status 404"},
		{event.InStage(event.StageFetch, timeout), "fetch: timeout"},
		{fmt.Errorf("apply effect: %w", &pgconn.PgError{Code: "23505", Message: secret}), "apply: database error 23505"},
		{event.Permanentf("fetch[0]: the answer's error is %q", secret), "apply: permanent failure"},
	}
	for _, c := range cases {
		got := FailureSummary(c.err)
		if got != c.want || strings.Contains(got, secret) {
			t.Errorf("FailureSummary(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestFailureIssuesKeepNoPayloadText: a team's service refusing a delivery
// with an answer that quotes the event (its e-mail address) makes the
// event dead with that text on its inbox row, where an operator reads it,
// but its failure issue keeps only the destination and the status; the
// erasure of the event then leaves the address nowhere in the inbox or
// the issues.
func TestFailureIssuesKeepNoPayloadText(t *testing.T) {
	const email = "zoe.issue@example.org"
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), email) {
			http.Error(w, "no contact", http.StatusBadRequest)
			return
		}
		http.Error(w, "invalid contact "+email, http.StatusUnprocessableEntity)
	}))
	defer svc.Close()
	pl := refForwardPipeline(t, fmt.Sprintf("      - url: %s\n        secret: env:FWD_SECRET\n", svc.URL))
	body := fmt.Sprintf(`{"id":"iss_pii","type":"payment.succeeded","created_at":%q,"data":{"payment_id":"pay_pii","email":%q}}`,
		time.Now().UTC().Format(time.RFC3339), email)
	pl.send("iss_pii", []byte(body), "", nil)
	pl.waitState(schemas.StateDead, 60*time.Second, "iss_pii")
	ctx := context.Background()
	var lastError string
	if err := pl.pool.QueryRow(ctx, `SELECT coalesce(last_error, '') FROM inbox WHERE event_id = 'iss_pii'`).Scan(&lastError); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lastError, email) {
		t.Fatalf("the event's last_error %q does not hold the answer: the test's service did not quote it", lastError)
	}
	issues := func() (n int, text string) {
		t.Helper()
		if err := pl.pool.QueryRow(ctx, `SELECT count(*), coalesce(string_agg(i::text, ' '), '') FROM failure_issues i`).Scan(&n, &text); err != nil {
			t.Fatal(err)
		}
		return n, text
	}
	n, text := issues()
	if n != 1 || strings.Contains(text, email) || strings.Contains(text, "invalid contact") || !strings.Contains(text, "status 422") {
		t.Fatalf("%d issue(s): %s; want one naming status 422 and holding none of the answer's text", n, text)
	}
	if _, err := admin.Erase(ctx, pl.pool, admin.Erasure{Provider: "ref", EventID: "iss_pii", RequestedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pl.pool.QueryRow(ctx, `SELECT count(*) FROM inbox i WHERE i::text LIKE '%' || $1 || '%'`, email).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d inbox rows hold the address after the erasure (%v)", left, err)
	}
	if _, text = issues(); strings.Contains(text, email) {
		t.Fatalf("an issue holds the address after the erasure: %s", text)
	}
}

package consumers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/redact"
	"github.com/gatehouse/gatehouse/schemas"
)

// issueRow is a failure_issues row as the tests read it.
type issueRow struct {
	ID                     int64
	Stage, Status, Message string
	Events, Failures       int64
	Reopened               int
	Types, Samples         []string
}

func (f *fixture) issues() []issueRow {
	f.t.Helper()
	rows, err := f.pool.Query(f.t.Context(), `SELECT id, stage, status, message, event_count, failures, reopened, event_types, sample_event_ids
FROM failure_issues WHERE provider = $1 ORDER BY id`, f.provider)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []issueRow
	for rows.Next() {
		var r issueRow
		if err := rows.Scan(&r.ID, &r.Stage, &r.Status, &r.Message, &r.Events, &r.Failures, &r.Reopened, &r.Types, &r.Samples); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A destination refusing deliveries makes the events dead; one issue in
// stage forward:<destination> counts them; another answer (another error
// text) makes a second issue; a resolved issue reopens when its failure
// recurs, a muted one stays muted.
func TestFailureIssuesEndToEnd(t *testing.T) {
	svc := newTeamService(t)
	svc.Answer.Store(http.StatusUnprocessableEntity)
	pl := forwardPipeline(t, svc, "")
	first := ids("iss_a", 3)
	for _, id := range first {
		pl.sendRef(id, "pay_"+id)
	}
	pl.waitState(schemas.StateDead, 60*time.Second, first...)
	is := pl.issues()
	if len(is) != 1 {
		t.Fatalf("issues = %+v, want one", is)
	}
	a := is[0]
	key, err := redact.DestinationKey(svc.URL())
	if err != nil {
		t.Fatal(err)
	}
	if a.Stage != event.StageForwardPrefix+key || a.Status != "open" || a.Events != 3 || a.Failures != 3 ||
		len(a.Samples) != 3 || len(a.Types) != 1 || a.Types[0] != "payment.succeeded" || !strings.Contains(a.Message, "status 422") {
		t.Fatalf("issue = %+v", a)
	}

	svc.Answer.Store(http.StatusBadRequest)
	second := ids("iss_b", 2)
	for _, id := range second {
		pl.sendRef(id, "pay_"+id)
	}
	pl.waitState(schemas.StateDead, 60*time.Second, second...)
	is = pl.issues()
	if len(is) != 2 || is[1].Events != 2 || !strings.Contains(is[1].Message, "status 400") || is[0].Events != 3 {
		t.Fatalf("issues after a second error = %+v", is)
	}

	if _, err := pl.pool.Exec(t.Context(), `UPDATE failure_issues SET status = CASE id WHEN $1 THEN 'resolved' ELSE 'muted' END`, a.ID); err != nil {
		t.Fatal(err)
	}
	svc.Answer.Store(http.StatusUnprocessableEntity)
	pl.sendRef("iss_c0", "pay_iss_c0")
	pl.waitState(schemas.StateDead, 60*time.Second, "iss_c0")
	svc.Answer.Store(http.StatusBadRequest)
	pl.sendRef("iss_d0", "pay_iss_d0")
	pl.waitState(schemas.StateDead, 60*time.Second, "iss_d0")
	is = pl.issues()
	if len(is) != 2 {
		t.Fatalf("issues after recurrence = %+v", is)
	}
	if is[0].Status != "open" || is[0].Reopened != 1 || is[0].Events != 4 || is[0].Samples[len(is[0].Samples)-1] != "iss_c0" {
		t.Errorf("resolved issue after a recurrence = %+v, want open again with 4 events", is[0])
	}
	if is[1].Status != "muted" || is[1].Events != 3 {
		t.Errorf("muted issue after a recurrence = %+v, want still muted with 3 events", is[1])
	}
}

// The provider's API answers 503 to every fetch: the events retry, then
// die; one issue in stage fetch counts both events (their payment ids
// differ, the normalised error does not) and every failed attempt; its
// message names the method and the status, not the path (ids from the
// payload). The ids
// carry a digit as real ones do (a prefixed id is normalised only then:
// pay_a would stay, as snake_case words such as event_id must).
func TestFailureIssuesFetchStage(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"1a", "2b"} {
		f.api.setPayment("pay_"+id, 1, "succeeded")
		f.api.fail("/v1/payments/pay_"+id, 503, 503, 503, 503, 503, 503)
		if !f.ingest("fs_"+id, "payment.succeeded", "pay_"+id) {
			t.Fatal("not new")
		}
	}
	f.relay()
	f.start(f.config(nil))
	f.waitState(schemas.StateDead, 60*time.Second, "fs_1a", "fs_2b")
	is := f.issues()
	if len(is) != 1 {
		t.Fatalf("issues = %+v, want one", is)
	}
	if a := is[0]; a.Stage != event.StageFetch || a.Events != 2 || a.Failures != 8 || a.Status != "open" ||
		a.Message != "provider api GET: status <n>" && a.Message != "provider api GET: status 503" {
		t.Fatalf("issue = %+v, want stage fetch, 2 events, 8 failed attempts (4 each), the message naming the status, not the path", a)
	}
}

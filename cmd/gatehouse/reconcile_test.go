package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testenv"
)

// `gatehouse reconcile --provider stripe --since …` against stripe-mock:
// --dry-run lists the missing event and changes nothing; the pass prints a
// progress line and the counts, and stores the event via reconcile; the
// next pass finds nothing missing.
func TestReconcileCommandBackfillsStripe(t *testing.T) {
	sm, ev := stripeMockEvent(t)
	id := ev.ID
	// stripe-mock's fixture event is years old: a dedupe window reaching it
	age := time.Since(time.Unix(ev.Created, 0)).Round(time.Hour) + 48*time.Hour
	dbURL := testenv.Postgres(t)
	cfgPath := writeConfigYAML(t, fmt.Sprintf(`providers:
  stripe:
    scheme: stripe
    secrets: [{id: s1, value: whsec_test}]
    api_url: %s
    api_key: sk_test_123
    dedupe_window: %s
    retention: %s
`, sm.URL, age, age))
	getenv := func(k string) string {
		if k == "GATEHOUSE_DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	call := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"reconcile", "--config", cfgPath}, args...), getenv, &out, &errOut); err != nil {
			t.Fatalf("reconcile %v: %v\n%s%s", args, err, out.String(), errOut.String())
		}
		return out.String()
	}
	since := (age - time.Hour).String()
	out := call("--provider", "stripe", "--since", since, "--dry-run")
	if !strings.Contains(out, "missing stripe/"+id+"\n") || !strings.Contains(out, "missing 1, stored 0") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run printed:\n%s", out)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	count := func() int {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM inbox WHERE event_id = $1 AND via = 'reconcile'`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count() != 0 {
		t.Fatal("the dry run stored the event")
	}
	out = call("--provider", "stripe", "--since", since)
	if !strings.Contains(out, "stripe backfill: listed 1, missing 1, stored 1") || !strings.Contains(out, "reconciled stripe by backfill") ||
		!strings.Contains(out, "missing 1, stored 1, stored meanwhile by their webhook 0, api calls 1") || count() != 1 {
		t.Fatalf("pass printed:\n%s", out)
	}
	if out = call("--provider", "stripe", "--since", since); !strings.Contains(out, "listed 1, missing 0, stored 0") {
		t.Fatalf("second pass printed:\n%s", out)
	}
	var errOut bytes.Buffer
	err = run(context.Background(), []string{"reconcile", "--config", cfgPath, "--provider", "nope"}, getenv, &errOut, &errOut)
	if err == nil || !strings.Contains(err.Error(), `provider "nope" is not configured`) {
		t.Fatalf("unknown provider: %v", err)
	}
}

// `gatehouse providers` says per scheme how it is reconciled, or why not.
func TestProvidersPrintReconciliation(t *testing.T) {
	for scheme, want := range map[string]string{
		"stripe":  "reconcile:  backfill from GET /v1/events",
		"github":  "reconcile:  redeliver: GET /repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
		"shopify": "reconcile:  none: the provider documents no API",
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{"providers", "--scheme", scheme}, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: no %q in\n%s", scheme, want, out.String())
		}
	}
}

// stripeMockEvent starts stripe-mock and returns it with the one event its
// fixture lists (GET /v1/events).
func stripeMockEvent(t *testing.T) (*testenv.StripeMock, stripeEvent) {
	t.Helper()
	sm, err := testenv.StartStripeMock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sm.Stop)
	req, _ := http.NewRequest(http.MethodGet, sm.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []stripeEvent `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Data) != 1 {
		t.Fatalf("stripe-mock's events: %v", err)
	}
	return sm, list.Data[0]
}

// stripeEvent is what the reconcile tests read of a listed Stripe event.
type stripeEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
}

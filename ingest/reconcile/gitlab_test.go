package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/inbox/inboxtest"
	"github.com/gatehouse/gatehouse/ingest/reconcile"
	"github.com/gatehouse/gatehouse/internal/settings"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// gitlabReconciler reconciles provider "gitlab", the project hook
// my-group/my-project 7, through api.
func gitlabReconciler(t *testing.T, api string, pool *pgxpool.Pool, interval time.Duration) *reconcile.Reconciler {
	t.Helper()
	kind, _ := providers.Lookup("gitlab")
	r, err := reconcile.New(reconcile.Config{Provider: "gitlab", Kind: kind,
		Settings: settings.Reconcile{Enabled: true, Hook: settings.HookProject, Project: "my-group/my-project", HookID: 7, Interval: interval},
		APIURL:   api, APIKey: []byte("glpat-test-token"), DedupeWindow: settings.GitLabDedupeWindow, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startGitLab serves hook behind Prism proxying with the transcribed
// description, which checks every call of the pass and every answer.
func startGitLab(t *testing.T, hook *gitlabHook) string {
	t.Helper()
	up := httptest.NewServer(hook)
	t.Cleanup(up.Close)
	prism, err := testenv.StartPrismProxy(context.Background(), filepath.Join("testdata", "gitlab-hook-events.openapi.yaml"), up.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	return prism.URL
}

// GitLab is reconciled by resend against the hook playing GitLab behind
// Prism: of 120 events, the one refused twice (a wrong token) and the
// one sent while the receiver was down are resent once each (the latest
// attempt of the refused one), arrive through the receiver and are stored
// once; the stored ones are not resent; a dry run resends nothing; a
// second pass resends nothing more. Every call carries PRIVATE-TOKEN.
func TestGitLabResendAgainstPrism(t *testing.T) {
	pool, w := inboxtest.NewWriter(t, 0)
	hook := newGitLabHook()
	hook.url = gitlabReceiver(t, w)
	var keys []string
	for i := range 118 {
		k := fmt.Sprintf("idem-%03d", i)
		keys = append(keys, k)
		hook.event(k)
		if code := hook.deliver(k, hook.url, gitlabToken); code != 204 {
			t.Fatalf("delivery of %s answered %d", k, code)
		}
	}
	hook.event("idem-refused")
	for range 2 {
		if code := hook.deliver("idem-refused", hook.url, "wrong-token"); code < 400 || code > 499 {
			t.Fatalf("a delivery with the wrong token answered %d, want a refusal (4xx)", code)
		}
	}
	hook.event("idem-down")
	if code := hook.deliver("idem-down", "http://127.0.0.1:1/webhooks/gitlab", gitlabToken); code != 0 {
		t.Fatalf("the delivery while the receiver was down answered %d", code)
	}
	latestRefused := hook.items[1]["id"].(int64) // the second refused attempt
	r := gitlabReconciler(t, startGitLab(t, hook), pool, 15*time.Minute)
	ctx := context.Background()

	dry, err := r.Pass(ctx, reconcile.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(hook.resent) != 0 || len(dry.Missing) != 2 {
		t.Fatalf("dry run %+v resent %v: want 2 missing, none resent", dry, hook.resent)
	}
	res, err := r.Pass(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 121 attempts of 120 events: two pages, then two resends
	if res.Listed != 121 || res.Closed != 2 || res.Deferred != 0 || res.Truncated || res.Calls != 4 ||
		!slices.Equal(res.Missing, []string{"idem-down", "idem-refused"}) {
		t.Fatalf("pass %+v: want 121 listed, idem-down and idem-refused missing and resent, 4 calls", res)
	}
	if len(hook.resent) != 2 || hook.resent[1] != latestRefused {
		t.Fatalf("resent %v: want idem-down's attempt, then idem-refused's latest %d", hook.resent, latestRefused)
	}
	storedOnce(t, pool, append(keys, "idem-refused", "idem-down")...)
	again, err := r.Pass(ctx, reconcile.Options{})
	if err != nil || len(again.Missing) != 0 || again.Closed != 0 || len(hook.resent) != 2 {
		t.Fatalf("second pass %+v, %v (resent %v): want nothing missing, nothing resent", again, err, hook.resent)
	}
	storedOnce(t, pool, "idem-refused", "idem-down")
	for _, tok := range hook.tokens {
		if tok != "glpat-test-token" {
			t.Fatalf("a call carried PRIVATE-TOKEN %q", tok)
		}
	}
}

// GitLab allows five resends a minute for each hook: a pass with an
// interval of one minute resends five of seven missing events and defers
// two, which a later pass resends; a 429 fails the pass with the
// Retry-After, and what was stored stays.
func TestGitLabResendIsPacedAndFailsOn429(t *testing.T) {
	pool, w := inboxtest.NewWriter(t, 0)
	hook := newGitLabHook()
	hook.url = gitlabReceiver(t, w)
	var keys []string
	for i := range 7 {
		k := fmt.Sprintf("idem-lost-%d", i)
		keys = append(keys, k)
		hook.event(k)
		hook.deliver(k, "http://127.0.0.1:1/webhooks/gitlab", gitlabToken)
	}
	hook.event("idem-stored")
	hook.deliver("idem-stored", hook.url, gitlabToken)
	api := startGitLab(t, hook)
	ctx := context.Background()
	res, err := gitlabReconciler(t, api, pool, time.Minute).Pass(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) != 7 || res.Closed != 5 || res.Deferred != 2 || len(hook.resent) != 5 {
		t.Fatalf("pass %+v resent %v: want 7 missing, 5 resent, 2 deferred", res, hook.resent)
	}
	hook.mu.Lock()
	hook.tooMany = true
	hook.mu.Unlock()
	_, err = gitlabReconciler(t, api, pool, time.Minute).Pass(ctx, reconcile.Options{})
	if err == nil || !strings.Contains(err.Error(), "answered 429 (Retry-After 60)") {
		t.Fatalf("err = %v, want the 429 and its Retry-After", err)
	}
	var result string
	if err := pool.QueryRow(ctx, `SELECT result FROM reconcile_passes WHERE provider = 'gitlab'`).Scan(&result); err != nil || result != "failed" {
		t.Fatalf("recorded %q, %v: want failed", result, err)
	}
	storedOnce(t, pool, "idem-stored")
	hook.mu.Lock()
	hook.tooMany = false
	hook.mu.Unlock()
	res, err = gitlabReconciler(t, api, pool, time.Minute).Pass(ctx, reconcile.Options{})
	if err != nil || len(res.Missing) != 2 || res.Closed != 2 || res.Deferred != 0 {
		t.Fatalf("later pass %+v, %v: want the 2 deferred resent", res, err)
	}
	storedOnce(t, pool, append(keys, "idem-stored")...)
}

// A malformed page of hook events fails the pass with ErrMalformedPage and
// a clear error: nothing is resent, and what was stored stays.
func TestGitLabMalformedPagesFailThePass(t *testing.T) {
	item := func(id int, hdr string) string {
		return fmt.Sprintf(`{"id":%d,"url":"https://h.example/webhooks/gitlab","trigger":"push_hooks","request_headers":%s,"request_data":{},"response_status":"500"}`, id, hdr)
	}
	ok := func(id int) string { return item(id, fmt.Sprintf(`{"Idempotency-Key":"idem-%d"}`, id)) }
	p1 := answer(200, "["+ok(3)+","+ok(2)+"]", "X-Next-Page", "2")
	pages := func(p ...func(http.ResponseWriter, *http.Request)) []func(http.ResponseWriter, *http.Request) {
		return p
	}
	for _, tc := range []struct {
		name  string
		pages []func(http.ResponseWriter, *http.Request)
		want  string
	}{
		{"no id", pages(answer(200, `[{"request_headers":{"Idempotency-Key":"k"}}]`, "X-Next-Page", "")), "without id or request_headers"},
		{"no request_headers", pages(answer(200, `[{"id":4}]`, "X-Next-Page", "")), "without id or request_headers"},
		{"no id header", pages(answer(200, "["+item(4, `{"X-Gitlab-Event":"Push Hook"}`)+"]", "X-Next-Page", "")),
			"hook event 4 has neither Idempotency-Key nor X-Gitlab-Event-UUID"},
		{"page repeats", pages(p1, p1), "page 2 repeats the hook events already listed"},
		{"next page stays", pages(answer(200, "["+ok(3)+"]", "X-Next-Page", "1")), `X-Next-Page "1" does not move on from page 1`},
		{"not json", pages(p1, answer(200, `[{"id":`, "X-Next-Page", "")), "malformed page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, w := inboxtest.NewWriter(t, 0)
			stored := inboxtest.Record("idem-2", 200*time.Hour)
			stored.Provider = "gitlab"
			inboxtest.WriteOne(t, w, stored)
			api, calls := eventList(t, tc.pages...)
			_, err := gitlabReconciler(t, api.URL, pool, 15*time.Minute).Pass(context.Background(), reconcile.Options{})
			if err == nil || !errors.Is(err, reconcile.ErrMalformedPage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformedPage saying %q", err, tc.want)
			}
			if int(calls.Load()) != len(tc.pages) {
				t.Fatalf("%d calls, want %d (the pages, no resend)", calls.Load(), len(tc.pages))
			}
			storedOnce(t, pool, "idem-2")
		})
	}
}

// An event GitLab logged while the pass read the pages shifts them: an
// item listed again on the next page is skipped, not a malformed page.
func TestGitLabShiftedPageIsNotMalformed(t *testing.T) {
	ok := func(id int) string {
		return fmt.Sprintf(`{"id":%d,"url":"u","trigger":"push_hooks","request_headers":{"X-Gitlab-Event-UUID":"uuid-%d"},"request_data":{},"response_status":"200"}`, id, id)
	}
	api, _ := eventList(t, answer(200, "["+ok(5)+","+ok(4)+"]", "X-Next-Page", "2"),
		answer(200, "["+ok(4)+","+ok(3)+"]", "X-Next-Page", ""),
		answer(201, `{"response_status":204}`), answer(201, `{"response_status":204}`), answer(201, `{"response_status":204}`))
	pool, _ := inboxtest.NewWriter(t, 0)
	res, err := gitlabReconciler(t, api.URL, pool, 15*time.Minute).Pass(context.Background(), reconcile.Options{})
	if err != nil || res.Listed != 3 || res.Closed != 3 || !slices.Equal(res.Missing, []string{"uuid-5", "uuid-4", "uuid-3"}) {
		t.Fatalf("pass %+v, %v: want 3 listed and resent once each, by X-Gitlab-Event-UUID", res, err)
	}
}

// A pass reads at most max_events hook events: it says it was truncated,
// resends the missing ones it listed, and leaves no partial window (the
// events carry no time: every pass lists them again from the first page).
func TestGitLabPassIsBoundedByMaxEvents(t *testing.T) {
	ok := func(id int) string {
		return fmt.Sprintf(`{"id":%d,"url":"u","trigger":"push_hooks","request_headers":{"Idempotency-Key":"idem-%d"},"request_data":{},"response_status":"500"}`, id, id)
	}
	resent := answer(201, `{"response_status":204}`)
	api, calls := eventList(t, answer(200, "["+ok(9)+","+ok(8)+","+ok(7)+"]", "X-Next-Page", "2"), resent, resent)
	pool, _ := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("gitlab")
	r, err := reconcile.New(reconcile.Config{Provider: "gitlab", Kind: kind,
		Settings: settings.Reconcile{Enabled: true, Hook: settings.HookGroup, Group: "42", HookID: 7, MaxEvents: 2},
		APIURL:   api.URL, APIKey: []byte("glpat-test-token"), DedupeWindow: settings.GitLabDedupeWindow, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Pass(context.Background(), reconcile.Options{})
	if err != nil || !res.Truncated || res.Listed != 2 || res.Closed != 2 || calls.Load() != 3 ||
		!slices.Equal(res.Missing, []string{"idem-9", "idem-8"}) {
		t.Fatalf("pass %+v, %v (%d calls): want 2 of the 3 listed and resent, truncated", res, err, calls.Load())
	}
	var partial *time.Time
	if err := pool.QueryRow(context.Background(), `SELECT partial_from FROM reconcile_passes WHERE provider = 'gitlab'`).Scan(&partial); err != nil || partial != nil {
		t.Fatalf("partial_from %v, %v: want none", partial, err)
	}
}

// A gitlab Reconciler needs a GitLab hook kind and a dedupe window
// covering GitLab's 7 days with a day's margin.
func TestGitLabReconcilerNeedsItsHookAndDedupeWindow(t *testing.T) {
	pool, _ := inboxtest.NewWriter(t, 0)
	kind, _ := providers.Lookup("gitlab")
	for _, tc := range []struct {
		hook   settings.Reconcile
		window time.Duration
		want   string
	}{
		{settings.Reconcile{Hook: settings.HookRepository, Owner: "o", Repo: "r", HookID: 1}, settings.GitLabDedupeWindow, "is not project or group"},
		{settings.Reconcile{Hook: settings.HookProject, Project: "1", HookID: 1}, 7 * 24 * time.Hour, "shorter than 192h0m0s"},
	} {
		_, err := reconcile.New(reconcile.Config{Provider: "gitlab", Kind: kind, Settings: tc.hook, APIURL: "https://gitlab.example.com",
			DedupeWindow: tc.window, Pool: pool})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v, %s) = %v, want %q", tc.hook, tc.window, err, tc.want)
		}
	}
}

package console

import (
	"context"
	"strings"
	"testing"
)

// The Parked page lists the parked keys with their head event and its
// error; a held key has the replay and release buttons, a waiting one
// none; an escaped key stays text.
func TestParkedPage(t *testing.T) {
	srv, pool := newServer(t)
	if code, _, body := get(t, srv, "/console/parked", operator.Subject); code != 200 || !strings.Contains(body, "No parked key") {
		t.Fatalf("empty: %d", code)
	}
	for _, q := range []string{
		`INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, head_error, state, on_dead)
VALUES ('https://team.example/…#3f2a9c1e', 'demo', 'pay_<b>1</b>', 'evt_1', 'forward to https://team.example/…#3f2a9c1e: status 503', 'held', 'hold')`,
		`INSERT INTO parked_keys (destination, provider, kafka_key, head_event_id, state) VALUES ('https://team.example/…#3f2a9c1e', 'demo', 'pay_2', 'evt_2', 'waiting')`,
		`INSERT INTO parked_events (destination, provider, kafka_key, event_id, event_type, envelope)
VALUES ('https://team.example/…#3f2a9c1e', 'demo', 'pay_<b>1</b>', 'evt_3', 'payment.succeeded', '{}')`,
		`INSERT INTO failure_issues (id, provider, stage, fingerprint, error_class, message, last_error) OVERRIDING SYSTEM VALUE
VALUES (4242, 'demo', 'forward:https://team.example/…#3f2a9c1e', 'f1', 'transient', 'forward to x: status 503', 'forward to x: status 503')`,
		`INSERT INTO failure_issue_events (issue_id, provider, event_id, received_at) VALUES (4242, 'demo', 'evt_1', now())`,
	} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	code, _, body := get(t, srv, "/console/parked", operator.Subject)
	if code != 200 {
		t.Fatalf("parked: %d", code)
	}
	for _, want := range []string{
		`pay_&lt;b&gt;1&lt;/b&gt;`, `href="/console/events/demo/evt_1"`, `status 503`, `href="/console/events/demo/evt_2"`,
		`class="parked-release" data-destination="https://team.example/…#3f2a9c1e" data-provider="demo" data-key="pay_&lt;b&gt;1&lt;/b&gt;"`,
		`class="replay" data-provider="demo" data-event="evt_1"`, `aria-current="page">Parked</a>`,
		`<table class="parked-causes">`, `<a href="/console/issues/4242">#4242</a>`, `none: going out`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if code, _, issue := get(t, srv, "/console/issues/4242", operator.Subject); code != 200 ||
		!strings.Contains(issue, `<dt>Parked keys</dt><dd><a href="/console/parked">1 keys</a>`) {
		t.Errorf("the issue page (%d) does not show its parked key", code)
	}
	if n := strings.Count(body, `class="parked-release"`); n != 1 {
		t.Errorf("%d release buttons, want 1 (the held key's)", n)
	}
	if code, _, _ := get(t, srv, "/console/parked", ""); code != 303 {
		t.Errorf("without a session: %d, want the sign-in redirect", code)
	}
}

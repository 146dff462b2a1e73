package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func sessionIDs(a answer) map[string]bool {
	out := map[string]bool{}
	list, _ := a.body["sessions"].([]any)
	for _, s := range list {
		out[s.(map[string]any)["id"].(string)] = true
	}
	return out
}

// TestSessionsOwnership: a caller lists and revokes only their own sessions;
// another person's session id is 404 and stays alive.
func TestSessionsOwnership(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	a1, _ := f.newSession("alice")
	a2, a2cookie := f.newSession("alice")
	b1, bcookie := f.newSession("bob")
	cookie := f.store.CookieName()

	a := f.bearerGet("/api/v1/sessions", f.token("alice", "sessions:read"))
	if a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	if got := sessionIDs(a); len(got) != 2 || !got[a1] || !got[a2] {
		t.Fatalf("alice sees %v, want %s and %s", got, a1, a2)
	}
	if a := f.bearerGet("/api/v1/sessions", f.token("alice", "sessions:write")); a.status != 403 || a.body["scope"] != "sessions:read" {
		t.Fatalf("list without sessions:read: %d %s", a.status, a.raw)
	}
	del := func(id, tok string) answer {
		return f.do(http.MethodDelete, "/api/v1/sessions/"+id, nil, "Authorization", "Bearer "+tok)
	}
	if a := del(b1, f.token("alice", "sessions:write")); a.status != 404 {
		t.Fatalf("alice revoking bob's session: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodGet, "/api/v1/sessions", nil, "Cookie", sessionCookie(cookie, bcookie)); a.status != 200 || !sessionIDs(a)[b1] {
		t.Fatalf("bob's session no longer works: %d %s", a.status, a.raw)
	}
	if a := del(a2, f.token("alice", "sessions:read")); a.status != 403 || a.body["error"] != "insufficient_scope" {
		t.Fatalf("revoke without sessions:write: %d %s", a.status, a.raw)
	}
	if a := del("not-a-uuid", f.token("alice", "sessions:write")); a.status != 404 {
		t.Fatalf("revoke garbage id: %d %s", a.status, a.raw)
	}
	if a := del(a2, f.token("alice", "sessions:write")); a.status != 204 {
		t.Fatalf("revoke own: %d %s", a.status, a.raw)
	}
	// Revocation takes effect on the revoked session's very next request.
	if a := f.do(http.MethodGet, "/api/v1/sessions", nil, "Cookie", sessionCookie(cookie, a2cookie)); a.status != 401 {
		t.Fatalf("revoked session still works: %d %s", a.status, a.raw)
	}
	if got := sessionIDs(f.bearerGet("/api/v1/sessions", f.token("alice", "sessions:read"))); len(got) != 1 || !got[a1] {
		t.Fatalf("after revoke alice sees %v", got)
	}
}

// TestBrowserSession: the browser reaches the same handlers with its cookie;
// unsafe methods need X-CSRF: 1; nothing secret is returned; an
// Authorization header takes precedence over the cookie.
func TestBrowserSession(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	cookie := f.store.CookieName()
	aliceID, aliceCookie := f.newSession("alice")
	otherID, _ := f.newSession("alice")
	_, carolCookie := f.newSession("carol")
	c := sessionCookie(cookie, aliceCookie)

	a := f.do(http.MethodGet, "/api/v1/sessions", nil, "Cookie", c)
	if a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.raw)
	}
	for _, s := range a.body["sessions"].([]any) {
		m := s.(map[string]any)
		if m["current"] != (m["id"] == aliceID) {
			t.Fatalf("current flag wrong: %v", m)
		}
	}
	if strings.Contains(a.raw, aliceCookie) || strings.Contains(strings.ToLower(a.raw), "token") {
		t.Fatalf("session list exposes a secret: %s", a.raw)
	}
	if a := f.do(http.MethodGet, "/api/v1/objects/acme/pay_1", nil, "Cookie", c); a.status != 200 {
		t.Fatalf("object via cookie: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodDelete, "/api/v1/sessions/"+otherID, nil, "Cookie", c); a.status != 403 || a.body["error"] != "csrf_required" {
		t.Fatalf("DELETE without X-CSRF: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodDelete, "/api/v1/sessions/"+otherID, nil, "Cookie", c, "X-CSRF", "true"); a.status != 403 {
		t.Fatalf("DELETE with X-CSRF: true: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodDelete, "/api/v1/sessions/"+otherID, nil, "Cookie", c, "X-CSRF", "1"); a.status != 204 {
		t.Fatalf("DELETE with X-CSRF: 1: %d %s", a.status, a.raw)
	}
	// Alice is no operator: events are refused by role, not by scope.
	if a := f.do(http.MethodGet, "/api/v1/events", nil, "Cookie", c); a.status != 403 || a.body["error"] != "forbidden" {
		t.Fatalf("events as non-operator: %d %s", a.status, a.raw)
	}
	// Carol is a configured operator; her browser replays with X-CSRF.
	cc := sessionCookie(cookie, carolCookie)
	if a := f.do(http.MethodPost, "/api/v1/events/acme/evt_1/replay", nil, "Cookie", cc); a.status != 403 || a.body["error"] != "csrf_required" {
		t.Fatalf("replay without X-CSRF: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodPost, "/api/v1/events/acme/evt_1/replay", nil, "Cookie", cc, "X-CSRF", "1"); a.status != 202 {
		t.Fatalf("replay by operator session: %d %s", a.status, a.raw)
	}
	// A bad bearer token is not rescued by a good cookie.
	if a := f.do(http.MethodGet, "/api/v1/sessions", nil, "Cookie", c, "Authorization", "Bearer nope.nope.nope"); a.status != 401 {
		t.Fatalf("bad bearer + good cookie: %d %s", a.status, a.raw)
	}
	if a := f.do(http.MethodGet, "/api/v1/sessions", nil, "Cookie", sessionCookie(cookie, "forged")); a.status != 401 || a.challenge != `Bearer realm="gatehouse"` {
		t.Fatalf("unknown cookie: %d %q", a.status, a.challenge)
	}
}

func eventIDs(a answer) []string {
	var out []string
	list, _ := a.body["events"].([]any)
	for _, e := range list {
		out = append(out, e.(map[string]any)["event_id"].(string))
	}
	return out
}

// TestEvents: operators (by role claim or by configured identity) list with
// filters, page, read and replay; others are refused.
func TestEvents(t *testing.T) {
	f := newFixture(t, fixtureOpts{operator: true})
	op := f.token("dave", "events:read events:replay", "roles", []string{"gatehouse:operator"})
	carol := f.token("carol", "events:read events:replay") // configured operator, no role claim
	if a := f.bearerGet("/api/v1/events", f.token("alice", "events:read events:replay")); a.status != 403 || a.body["error"] != "forbidden" {
		t.Fatalf("non-operator: %d %s", a.status, a.raw)
	}
	if a := f.bearerGet("/api/v1/events", f.token("dave", "objects:read", "roles", []string{"gatehouse:operator"})); a.status != 403 || a.body["error"] != "insufficient_scope" {
		t.Fatalf("operator without scope: %d %s", a.status, a.raw)
	}
	// The seeded events were received on 2026-01-01: filters no index
	// serves (type, provider alone, event_id alone) search the last 24 h
	// unless since or until is given (TestEventListBoundsFiltersNoIndexServes).
	const anyTime = "&since=2000-01-01T00:00:00Z"
	for q, want := range map[string]string{
		"":                             "evt_5 evt_4 evt_3 evt_2 evt_1",
		"?provider=acme" + anyTime:     "evt_3 evt_2 evt_1",
		"?type=invoice.paid" + anyTime: "evt_5 evt_4 evt_3",
		"?processing_state=dead":       "evt_4 evt_1",
		"?provider=beta&processing_state=dead" + anyTime:    "evt_4",
		"?provider=acme&type=payment.succeeded" + anyTime:   "evt_2 evt_1",
		"?provider=nobody" + anyTime:                        "",
		"?processing_state=succeeded&type=absent" + anyTime: "",
		"?event_id=evt_3" + anyTime:                         "evt_3",
		"?event_id=evt_3&provider=beta":                     "",
		"?event_id=evt_3&provider=acme":                     "evt_3",
		"?since=2000-01-01T00:00:00Z":                       "evt_5 evt_4 evt_3 evt_2 evt_1",
		"?until=2000-01-01T00:00:00Z":                       "",
	} {
		a := f.bearerGet("/api/v1/events"+q, op)
		if a.status != 200 || strings.Join(eventIDs(a), " ") != want {
			t.Errorf("events%s: %d %v, want %q", q, a.status, eventIDs(a), want)
		}
	}
	// Paging with the cursor walks every row once.
	var all []string
	next := "/api/v1/events?limit=2"
	for next != "" {
		a := f.bearerGet(next, carol)
		if a.status != 200 {
			t.Fatalf("page: %d %s", a.status, a.raw)
		}
		all = append(all, eventIDs(a)...)
		next = ""
		if c, ok := a.body["next_cursor"].(string); ok {
			next = "/api/v1/events?limit=2&cursor=" + c
		}
	}
	if strings.Join(all, " ") != "evt_5 evt_4 evt_3 evt_2 evt_1" {
		t.Fatalf("paged %v", all)
	}
	for _, q := range []string{"?limit=0", "?limit=9999", "?cursor=not*base64", "?provider=a%20b",
		"?event_id=", "?since=yesterday", "?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z"} {
		if a := f.bearerGet("/api/v1/events"+q, op); a.status != 400 || a.body["error"] != "invalid_request" {
			t.Errorf("events%s: %d %s", q, a.status, a.raw)
		}
	}
	a := f.bearerGet("/api/v1/events/acme/evt_1", op)
	if a.status != 200 || a.body["processing_state"] != "dead" || a.body["payload"].(map[string]any)["id"] != "evt_1" {
		t.Fatalf("read: %d %s", a.status, a.raw)
	}
	if a := f.bearerGet("/api/v1/events/acme/missing", op); a.status != 404 {
		t.Fatalf("read missing: %d", a.status)
	}
}

// TestReplay: a replay writes an outbox row exactly like the receiver's,
// resets attempts, and is recorded with the operator's identity.
func TestReplay(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	op := f.token("dave", "events:replay", "roles", []string{"gatehouse:operator"})
	post := func(path, tok string) answer {
		return f.do(http.MethodPost, path, nil, "Authorization", "Bearer "+tok)
	}
	if a := post("/api/v1/events/acme/evt_1/replay", f.token("dave", "events:read", "roles", []string{"gatehouse:operator"})); a.status != 403 || a.body["scope"] != "events:replay" {
		t.Fatalf("replay without events:replay: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/events/acme/evt_1/replay", f.token("alice", "events:replay")); a.status != 403 || a.body["error"] != "forbidden" {
		t.Fatalf("replay by non-operator: %d %s", a.status, a.raw)
	}
	a := post("/api/v1/events/acme/evt_1/replay", op)
	if a.status != 202 || a.body["previous_state"] != "dead" {
		t.Fatalf("replay: %d %s", a.status, a.raw)
	}
	var agg, typ, topic, by string
	var attempts, replays int
	var state string
	if err := f.pool.QueryRow(ctx, `SELECT o.aggregateid, o.type, o.topic, i.attempts, i.replays, i.processing_state, r.requested_by
FROM outbox o JOIN inbox i USING (event_id) JOIN replays r ON r.outbox_id = o.id WHERE o.id = $1`, a.body["outbox_id"]).
		Scan(&agg, &typ, &topic, &attempts, &replays, &state, &by); err != nil {
		t.Fatal(err)
	}
	if agg != "pay_1" || typ != "payment.succeeded" || topic != "gatehouse.webhooks.acme" || attempts != 0 || replays != 1 || state != "pending" || by != "api:"+f.is.URL+" dave" {
		t.Fatalf("outbox/inbox after replay: agg=%s type=%s topic=%s attempts=%d replays=%d state=%s by=%q", agg, typ, topic, attempts, replays, state, by)
	}
	if a := post("/api/v1/events/beta/evt_4/replay", op); a.status != 202 {
		t.Fatalf("replay beta: %d %s", a.status, a.raw)
	}
	if err := f.pool.QueryRow(ctx, `SELECT topic, aggregateid FROM outbox WHERE event_id = 'evt_4'`).Scan(&topic, &agg); err != nil || topic != "beta-events" || agg != "evt_4" {
		t.Fatalf("beta outbox: %v %s %s", err, topic, agg)
	}
	if a := post("/api/v1/events/acme/evt_2/replay", op); a.status != 409 {
		t.Fatalf("replay of a succeeded event without force: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/events/acme/evt_2/replay?force=true", op); a.status != 202 || a.body["forced"] != true {
		t.Fatalf("forced replay: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/events/acme/evt_2/replay?force=maybe", op); a.status != 400 {
		t.Fatalf("force=maybe: %d %s", a.status, a.raw)
	}
	if a := post("/api/v1/events/acme/nope/replay", op); a.status != 404 {
		t.Fatalf("replay missing: %d %s", a.status, a.raw)
	}
}

func objectIDs(a answer) []string {
	var out []string
	list, _ := a.body["objects"].([]any)
	for _, o := range list {
		m := o.(map[string]any)
		out = append(out, m["provider"].(string)+"/"+m["object_id"].(string))
	}
	return out
}

// TestObjectsOwnership: objects are readable only by their owner, through
// each provider's owner_path ("<issuer> <subject>" or a bare subject under
// owner_issuer); providers without a mapping expose nothing.
func TestObjectsOwnership(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	alice, bob := f.token("alice", "objects:read"), f.token("bob", "objects:read")
	for _, tc := range []struct {
		tok, path string
		status    int
	}{
		{alice, "/api/v1/objects/acme/pay_1", 200},
		{alice, "/api/v1/objects/acme/pay_2", 404},
		{alice, "/api/v1/objects/acme/pay_3", 404}, // same subject, other issuer
		{alice, "/api/v1/objects/beta/inv_1", 200},
		{alice, "/api/v1/objects/beta/inv_2", 404},
		{alice, "/api/v1/objects/noowner/x_1", 404},
		{alice, "/api/v1/objects/acme/missing", 404},
		{bob, "/api/v1/objects/acme/pay_2", 200},
		{bob, "/api/v1/objects/acme/pay_1", 404},
	} {
		if a := f.bearerGet(tc.path, tc.tok); a.status != tc.status {
			t.Errorf("%s: %d, want %d (%s)", tc.path, a.status, tc.status, a.raw)
		}
	}
	if got := strings.Join(objectIDs(f.bearerGet("/api/v1/objects", alice)), " "); got != "acme/pay_1 beta/inv_1" {
		t.Fatalf("alice's objects: %q", got)
	}
	if got := strings.Join(objectIDs(f.bearerGet("/api/v1/objects?provider=beta", bob)), " "); got != "beta/inv_2" {
		t.Fatalf("bob's beta objects: %q", got)
	}
	a := f.bearerGet("/api/v1/objects?limit=1", alice)
	c, _ := a.body["next_cursor"].(string)
	if got := strings.Join(objectIDs(a), " "); got != "acme/pay_1" || c == "" {
		t.Fatalf("page 1: %q cursor %q", got, c)
	}
	a = f.bearerGet("/api/v1/objects?limit=1&cursor="+c, alice)
	if got := strings.Join(objectIDs(a), " "); got != "beta/inv_1" || a.body["next_cursor"] != nil {
		t.Fatalf("page 2: %q %v", got, a.body["next_cursor"])
	}
}

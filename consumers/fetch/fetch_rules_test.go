package fetch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// recorded is one request an API test server saw.
type recorded struct {
	method, path, query, accept, auth, contentType, body string
}

// ruleAPI answers with answer(r) and records every request.
func ruleAPI(t *testing.T, answer func(w http.ResponseWriter, r recorded)) (*httptest.Server, *atomic.Int64, *atomic.Value) {
	t.Helper()
	var n atomic.Int64
	var last atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		b, _ := io.ReadAll(r.Body)
		rec := recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Authorization"),
			r.Header.Get("Content-Type"), string(b)}
		last.Store(rec)
		answer(w, rec)
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &last
}

func envelopeEvent(typ, data string) *event.Event {
	return &event.Event{Provider: "p", ID: "e1", Type: typ, Envelope: []byte(`{"id":"e1","type":"` + typ + `","data":` + data + `}`)}
}

// url_from requests an absolute URL from the payload only when it is an
// api_url address (scheme, host and port, below api_url's path, no user
// info, query or fragment); anything else fails permanently without a
// request. The object's default key is the URL.
func TestFetchURLFromOnlyRequestsAPIAddresses(t *testing.T) {
	srv, n, last := ruleAPI(t, func(w http.ResponseWriter, r recorded) {
		_, _ = w.Write([]byte(`{"resource":{"uri":"x","updated_at":"2024-05-06T07:08:09.123456Z"}}`))
	})
	api, err := NewAPIClient(APIClientConfig{BaseURL: srv.URL + "/api", Key: []byte("tok")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFetcher([]providers.Fetch{{Types: []string{"*"}, Object: "invitee", URLFrom: "data.payload.uri",
		Answer: "resource", Version: []string{"updated_at"}}}, api, "")
	if err != nil {
		t.Fatal(err)
	}
	good := srv.URL + "/api/scheduled_events/AB%2FC/invitees/D1"
	eff, err := f.Handle(context.Background(), envelopeEvent("invitee.created", `{"payload":{"uri":"`+good+`"}}`), batch())
	if err != nil {
		t.Fatal(err)
	}
	if r := last.Load().(recorded); r.method != "GET" || r.path != "/api/scheduled_events/AB%2FC/invitees/D1" || r.auth != "Bearer tok" {
		t.Errorf("request %+v", r)
	}
	if eff.ObjectID != good || eff.ObjectType != "invitee" {
		t.Errorf("effect %+v", eff)
	}
	before := n.Load()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, bad := range []string{
		"https://" + host + "/api/x/1",           // another scheme
		"http://evil.example/api/x/1",            // another host
		"http://" + host + ".evil.example/api/1", // a host with the api's as prefix
		"http://user:pw@" + host + "/api/x/1",    // user info
		"http://" + host + "/api/x/1?redirect=1", // a query
		"http://" + host + "/api/x/1#frag",       // a fragment
		"http://" + host + "/other/x/1",          // not below api_url's path
		"http://" + host + "/api",                // api_url itself
		"http://" + host + "/api/../admin/1",     // a dot segment
		"http://" + host + "/apiary/1",           // a path with api_url's as prefix
		"/api/x/1",                               // relative
		"",                                       // missing
	} {
		_, err := f.Handle(context.Background(), envelopeEvent("invitee.created", `{"payload":{"uri":"`+bad+`"}}`), batch())
		if event.Classify(err) != event.ClassPermanent {
			t.Errorf("%q: %v, want a permanent error", bad, err)
		}
	}
	if n.Load() != before {
		t.Errorf("%d requests for URLs that are not api_url addresses", n.Load()-before)
	}
}

// A GraphQL rule posts the document with the id as a JSON variable, reads
// the object under data.<object>, and retries only the error codes the
// rule lists (also from a 400 answer); any other error is permanent.
func TestFetchGraphQLRule(t *testing.T) {
	srv, _, last := ruleAPI(t, func(w http.ResponseWriter, r recorded) {
		var req struct {
			Query     string            `json:"query"`
			Variables map[string]string `json:"variables"`
		}
		_ = json.Unmarshal([]byte(r.body), &req)
		switch req.Variables["id"] {
		case "busy":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED"}}]}`))
		case "gone":
			_, _ = w.Write([]byte(`{"errors":[{"message":"Entity not found: Issue","extensions":{"code":"INVALID_INPUT"}}],"data":null}`))
		case "nocode":
			_, _ = w.Write([]byte(`{"errors":[{"message":"Entity not found"}],"data":{"issue":null}}`))
		default:
			idJSON, _ := json.Marshal(req.Variables["id"])
			_, _ = w.Write([]byte(`{"data":{"issue":{"id":` + string(idJSON) + `,"title":"t","updatedAt":"2024-02-03T04:05:06.789Z"}}}`))
		}
	})
	api, _ := NewAPIClient(APIClientConfig{BaseURL: srv.URL, Key: []byte("lin_api_k"), Auth: providers.AuthHeader, AuthHeader: "Authorization"})
	rule := providers.Fetch{Types: []string{"Issue.*"}, Object: "issue", Key: "issue/{data.data.id}", URL: "/graphql",
		GraphQL: "query($id: String!) { issue(id: $id) { id title updatedAt } }", Variables: map[string]string{"id": "{data.data.id}"},
		Answer: "data.issue", Version: []string{"updatedAt"}, AnswerError: "errors.0.extensions.code", RetryErrors: []string{"RATELIMITED"}}
	f, err := NewFetcher([]providers.Fetch{rule}, api, "")
	if err != nil {
		t.Fatal(err)
	}
	id := `a"b\c`
	eff, err := f.Handle(context.Background(), envelopeEvent("Issue.update", `{"data":{"id":"a\"b\\c"}}`), batch())
	if err != nil {
		t.Fatal(err)
	}
	r := last.Load().(recorded)
	var sent struct {
		Query     string            `json:"query"`
		Variables map[string]string `json:"variables"`
	}
	if err := json.Unmarshal([]byte(r.body), &sent); err != nil || sent.Variables["id"] != id || sent.Query != rule.GraphQL ||
		r.method != "POST" || r.path != "/graphql" || r.contentType != "application/json" || r.auth != "lin_api_k" {
		t.Errorf("request %+v (%v)", r, err)
	}
	if eff.ObjectID != "issue/"+id || eff.ObjectType != "issue" || eff.Version != testkit.Micros(t, "2024-02-03T04:05:06.789Z") {
		t.Errorf("effect %+v", eff)
	}
	for id, want := range map[string]string{"busy": event.ClassTransient, "gone": event.ClassPermanent, "nocode": event.ClassPermanent} {
		if _, err := f.Handle(context.Background(), envelopeEvent("Issue.update", `{"data":{"id":"`+id+`"}}`), batch()); event.Classify(err) != want {
			t.Errorf("%s: %v, want %s", id, err, want)
		}
	}
}

// A Web API that answers 200 with an error field (Slack's "ok": false)
// fails the event: permanently, unless the rule retries that error. The
// provider's Accept header and a bot token are sent.
func TestFetchAnswerErrorAcceptAndBotAuth(t *testing.T) {
	srv, _, last := ruleAPI(t, func(w http.ResponseWriter, r recorded) {
		switch {
		case strings.Contains(r.query, "C404"):
			_, _ = w.Write([]byte(`{"ok":false,"error":"channel_not_found"}`))
		case strings.Contains(r.query, "C500"):
			_, _ = w.Write([]byte(`{"ok":false,"error":"internal_error"}`))
		default:
			_, _ = w.Write([]byte(`{"ok":true,"channel":{"id":"C1","name":"general","updated":1678229664302}}`))
		}
	})
	api, _ := NewAPIClient(APIClientConfig{BaseURL: srv.URL + "/api", Key: []byte("xoxb-1"), Auth: providers.AuthBot,
		Accept: "application/vnd.api+json"})
	f, err := NewFetcher([]providers.Fetch{{Types: []string{"channel_created"}, Object: "channel", Key: "{data.team_id}/channel/{data.event.channel.id}",
		URL: "/conversations.info", Query: map[string]string{"channel": "{data.event.channel.id}"}, Answer: "channel",
		Version: []string{"updated"}, AnswerError: "error", RetryErrors: []string{"internal_error"}}}, api, "")
	if err != nil {
		t.Fatal(err)
	}
	ev := func(ch string) *event.Event {
		return envelopeEvent("channel_created", `{"team_id":"T1","event":{"type":"channel_created","channel":{"id":"`+ch+`"}}}`)
	}
	eff, err := f.Handle(context.Background(), ev("C1"), batch())
	if err != nil {
		t.Fatal(err)
	}
	if r := last.Load().(recorded); r.path != "/api/conversations.info" || r.query != "channel=C1" || r.auth != "Bot xoxb-1" || r.accept != "application/vnd.api+json" {
		t.Errorf("request %+v", r)
	}
	if eff.ObjectID != "T1/channel/C1" || eff.Version != 1678229664302 {
		t.Errorf("effect %+v", eff)
	}
	if _, err := f.Handle(context.Background(), ev("C404"), batch()); event.Classify(err) != event.ClassPermanent || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("channel_not_found: %v, want permanent", err)
	}
	if _, err := f.Handle(context.Background(), ev("C500"), batch()); event.Classify(err) != event.ClassTransient {
		t.Errorf("internal_error: %v, want transient", err)
	}
}

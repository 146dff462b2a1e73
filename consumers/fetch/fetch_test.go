package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// A rule's URL takes each payload value as one escaped path segment,
// refuses empty, "." and ".." values without a request, reads the object
// at its answer path and its version from a path, a numeric ETag or the
// fetch time; a 4xx the rule retries is transient.
func TestFetchRuleRequestsAndVersions(t *testing.T) {
	var requests atomic.Int64
	var lastPath, lastQuery, lastKey atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		lastPath.Store(r.URL.EscapedPath())
		lastQuery.Store(r.URL.RawQuery)
		lastKey.Store(r.Header.Get("X-Key"))
		switch r.URL.Query().Get("mode") {
		case "conflict":
			http.Error(w, `{"error":"busy"}`, http.StatusConflict)
			return
		case "etag":
			w.Header().Set("ETag", `W/"42"`)
		case "opaque":
			w.Header().Set("ETag", `"33a64df551425fcc55e4d42a148795d9f25f89d4"`)
		}
		_, _ = w.Write([]byte(`{"thing":{"id":"x","updated_at":"2024-01-02T03:04:05Z","rev":7}}`))
	}))
	defer srv.Close()
	api, err := NewAPIClient(APIClientConfig{BaseURL: srv.URL, Key: []byte("k1"), Auth: providers.AuthHeader, AuthHeader: "X-Key"})
	if err != nil {
		t.Fatal(err)
	}
	rule := func(version ...string) providers.Fetch {
		return providers.Fetch{Types: []string{"thing.*"}, Object: "thing", URL: "/v2/things/{data.id}.json",
			Query: map[string]string{"mode": "{data.mode}"}, Answer: "thing", Version: version, Retry: []int{409}}
	}
	ev := func(id, mode string) *event.Event {
		return &event.Event{Provider: "p", ID: "e", Type: "thing.updated",
			Envelope: []byte(`{"id":"e","type":"thing.updated","data":{"id":"` + id + `","mode":"` + mode + `"}}`)}
	}
	f, err := NewFetcher([]providers.Fetch{rule("updated_at")}, api, "")
	if err != nil {
		t.Fatal(err)
	}
	eff, err := f.Handle(context.Background(), ev("a/b c", "plain"), batch())
	if err != nil {
		t.Fatal(err)
	}
	if p := lastPath.Load(); p != "/v2/things/a%2Fb%20c.json" {
		t.Errorf("path %v", p)
	}
	if lastKey.Load() != "k1" || lastQuery.Load() != "mode=plain" {
		t.Errorf("key %v query %v", lastKey.Load(), lastQuery.Load())
	}
	if eff.ObjectID != "a/b c" || eff.ObjectType != "thing" || eff.Version != time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro() || string(eff.Data) != `{"id":"x","updated_at":"2024-01-02T03:04:05Z","rev":7}` {
		t.Errorf("effect %+v %s", eff, eff.Data)
	}
	before := requests.Load()
	for _, bad := range []string{"", ".", ".."} {
		if _, err := f.Handle(context.Background(), ev(bad, "plain"), batch()); event.Classify(err) != event.ClassPermanent {
			t.Errorf("id %q: %v, want permanent", bad, err)
		}
	}
	if requests.Load() != before {
		t.Error("a refused id made a request")
	}
	if _, err := f.Handle(context.Background(), ev("x", "conflict"), batch()); err == nil || event.Classify(err) != event.ClassTransient {
		t.Errorf("409 with retry: [409]: %v, want transient", err)
	}
	for version, want := range map[string]int64{"rev": 7, providers.VersionETag: 42} {
		f, _ := NewFetcher([]providers.Fetch{rule(version)}, api, "")
		eff, err := f.Handle(context.Background(), ev("x", "etag"), batch())
		if err != nil || eff.Version != want {
			t.Errorf("version %s: %+v %v, want %d", version, eff, err, want)
		}
	}
	// An opaque ETag orders nothing: the next source (the fetch time)
	// decides; alone it fails the event permanently.
	f, _ = NewFetcher([]providers.Fetch{rule(providers.VersionETag, providers.VersionFetched)}, api, "")
	sent := time.Now()
	if eff, err := f.Handle(context.Background(), ev("x", "opaque"), batch()); err != nil || eff.Version < sent.UnixMicro() || eff.Version > time.Now().UnixMicro() {
		t.Errorf("opaque etag, then fetched: %+v %v, want the fetch time", eff, err)
	}
	f, _ = NewFetcher([]providers.Fetch{rule(providers.VersionETag)}, api, "")
	if _, err := f.Handle(context.Background(), ev("x", "opaque"), batch()); event.Classify(err) != event.ClassPermanent || !strings.Contains(err.Error(), "not a decimal version") {
		t.Errorf("opaque etag alone: %v, want permanent", err)
	}
	f, _ = NewFetcher([]providers.Fetch{rule("missing")}, api, "")
	if _, err := f.Handle(context.Background(), ev("x", "plain"), batch()); event.Classify(err) != event.ClassPermanent {
		t.Errorf("no version: %v, want permanent", err)
	}
	// No rule matches, or a skip rule: no effect, no request.
	f, _ = NewFetcher([]providers.Fetch{{Types: []string{"other.*"}, Skip: "not ours"}}, api, "")
	before = requests.Load()
	if eff, err := f.Handle(context.Background(), ev("x", "plain"), batch()); eff != nil || err != nil || requests.Load() != before {
		t.Errorf("unmatched: %+v %v", eff, err)
	}
}

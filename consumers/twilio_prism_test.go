package consumers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/consumers/event"
	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/internal/testkit"
	"github.com/gatehouse/gatehouse/schemas"
)

// Twilio's catalogue rules against Stoplight Prism serving Twilio's own
// published description of its 2010-04-01 API (twilio-oai, shipped in npm
// @twilio-alpha/mcp): signed message and call status callbacks (form
// bodies, the URL signed) go through the receiver, the relay and the
// consumer; each lands in provider_objects as the description's "fetch"
// example with its date_updated (RFC 2822) as the version, fetched with
// HTTP basic auth (the description's accountSid_authToken scheme, which
// Prism enforces). The description declares no 404 for these operations,
// so a proxy in front of Prism answers Twilio's documented 20404 error for
// one message; another message is redirected, and the redirect is not
// followed.
func TestTwilioFetchAgainstPrism(t *testing.T) {
	spec, err := testenv.TwilioSpec(t.TempDir(),
		"/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json", "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json")
	if err != nil {
		t.Fatal(err)
	}
	prism, err := testenv.StartPrism(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prism.Stop)
	target, _ := url.Parse(prism.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	const account = "ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	var moved, basic, requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if u, p, ok := r.BasicAuth(); ok && u == account && p == "auth-token" {
			basic.Add(1)
		}
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			moved.Add(1)
		case strings.Contains(r.URL.Path, "/Messages/SM00000000000000000000000000000404"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code": 20404, "message": "The requested resource was not found", "more_info": "https://www.twilio.com/docs/errors/20404", "status": 404}`))
			return
		case strings.Contains(r.URL.Path, "/Messages/SM00000000000000000000000000000301"):
			http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusFound)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)

	pl := newPipeline(t, "twilio", `    scheme: twilio
    secrets: [{id: s1, value: twilio-auth-token}]
    public_url: https://hooks.example.com/webhooks/twilio
    api_url: `+api.URL+`
    api_key: `+account+`:auth-token
`)
	send := func(token, body string) {
		pl.send(token, []byte(body), "application/x-www-form-urlencoded", http.Header{"I-Twilio-Idempotency-Token": {token}})
	}
	send("tw-msg", "AccountSid="+account+"&MessageSid=SMb7c0a2ce80504485a6f653a7110836f5&MessageStatus=sent")
	send("tw-call", "AccountSid="+account+"&CallSid=CAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&CallStatus=completed")
	send("tw-gone", "AccountSid="+account+"&MessageSid=SM00000000000000000000000000000404&MessageStatus=failed")
	send("tw-moved", "AccountSid="+account+"&MessageSid=SM00000000000000000000000000000301&MessageStatus=delivered")
	pl.waitState(schemas.StateSucceeded, 60*time.Second, "tw-msg", "tw-call")
	pl.waitState(schemas.StateDead, 30*time.Second, "tw-gone", "tw-moved")

	for key, want := range map[string][3]string{
		"SMb7c0a2ce80504485a6f653a7110836f5": {"message", "Fri, 24 May 2019 17:18:28 +0000", `"body": "testing"`},
		"CAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": {"call", "Fri, 18 Oct 2019 17:01:00 +0000", `"status": "completed"`},
	} {
		typ, v, data := pl.object(key)
		if typ != want[0] || v != testkit.Micros(t, want[1]) {
			t.Errorf("%s: %s version %d, want %s version %s", key, typ, v, want[0], want[1])
		}
		mustContain(t, key, data, want[2])
	}
	if r := pl.inbox("tw-gone"); r.LastErrorClass != event.ClassPermanent || !strings.Contains(r.LastError, "status 404") {
		t.Errorf("404: %+v", r)
	}
	if r := pl.inbox("tw-moved"); r.LastErrorClass != event.ClassPermanent || !strings.Contains(r.LastError, "redirect") {
		t.Errorf("redirect: %+v", r)
	}
	if moved.Load() != 0 {
		t.Errorf("the redirect was followed %d times", moved.Load())
	}
	if basic.Load() != requests.Load() {
		t.Errorf("%d of %d requests carried the account's basic auth", basic.Load(), requests.Load())
	}
}

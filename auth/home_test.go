package auth

import (
	"net/http"
	"testing"
)

// GET / takes a signed-in user to Config.Home's page (cmd/gatehouse: the
// console for an operator), else to the account page; a visitor without a
// session to the sign-in page (issue 36: an operator landed on /account,
// which has no link to the console).
func TestHomeSendsEachUserToTheirPage(t *testing.T) {
	h := newRP(t, testPool(t), startHostileOP(t), nil)
	get := func(c *http.Client) string {
		t.Helper()
		resp, err := noFollow(c).Get(h.base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("GET /: %d", resp.StatusCode)
		}
		return resp.Header.Get("Location")
	}
	if loc := get(h.browser()); loc != "/signin?next=%2Faccount" {
		t.Errorf("no session: %q", loc)
	}
	b := h.browser()
	h.mustLogin(b)
	if loc := get(b); loc != "/account" {
		t.Errorf("signed in, no home configured: %q, want /account", loc)
	}
	h.svc.homeOf = func(u User) string {
		if u.Subject == hostileSubject {
			return "/console/"
		}
		return ""
	}
	if loc := get(b); loc != "/console/" {
		t.Errorf("signed-in operator: %q, want /console/", loc)
	}
}

// Package redact renders URLs without their credentials, and names the
// forward destination a URL points at: shared by the configuration's
// validation (internal/config) and the forwarders (consumers/forward).
package redact

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// redactedValue replaces each secret part of a URL that URL renders.
const redactedValue = "REDACTED"

// URL renders a URL for errors, logs, metrics and stored error
// texts without the parts that may carry credentials: the user info (user
// name and password) becomes REDACTED, every query value becomes REDACTED
// (the names stay, so an operator still sees which parameters are set), and
// the fragment is dropped. url.URL.Redacted masks only the password, so a
// ?token=… would survive it. A text that does not parse as a URL is cut at
// its first '?' or '#' and loses everything up to an '@'.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		s := raw
		if i := strings.IndexAny(s, "?#"); i >= 0 {
			s = s[:i]
		}
		if i := strings.LastIndex(s, "@"); i >= 0 {
			scheme := ""
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				scheme = s[:j+3]
			}
			s = scheme + redactedValue + s[i:]
		}
		return s
	}
	r := *u
	if r.User != nil {
		r.User = url.User(redactedValue)
	}
	r.Fragment, r.RawFragment = "", ""
	if r.RawQuery != "" || r.ForceQuery {
		q, err := url.ParseQuery(r.RawQuery)
		if err != nil && len(q) == 0 {
			r.RawQuery = redactedValue
		} else {
			names := make([]string, 0, len(q))
			for k := range q {
				names = append(names, k)
			}
			sort.Strings(names)
			parts := make([]string, 0, len(names))
			for _, k := range names {
				parts = append(parts, url.QueryEscape(k)+"="+redactedValue)
			}
			r.RawQuery = strings.Join(parts, "&")
		}
	}
	return r.String()
}

// DestinationKey is the forward destination a URL names: its scheme, host
// and port (the scheme's default when absent), lowercased, and its path
// ("/" when empty); user info, query and fragment are not part of it.
// Forward entries with one key share one circuit breaker, concurrency
// bound and rate limit. It fails on a URL that is not absolute.
func DestinationKey(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("forward url %q is not absolute", URL(raw))
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + path, nil
}

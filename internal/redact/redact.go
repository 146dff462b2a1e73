// Package redact renders URLs and connection strings without their
// credentials, and names the forward destination a URL points at without
// its path: shared by the configuration's validation and `config check`
// (internal/config), `doctor` and the forwarders (consumers/forward).
package redact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
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

// DestinationKey is the forward destination a URL names, in the form
// every display of it uses (Destination): its scheme and host, lowercased,
// the port when it is not the scheme's default, and the path as a digest:
// "https://hooks.slack.com/…#3f2a9c1e" (the first 8 hex digits of the
// SHA-256 of the escaped path), or "https://svc.example/" for an empty or
// "/" path. User info, query and fragment are not part of it. A webhook
// URL's path is often its credential (Slack, Discord and Teams incoming
// webhooks), so the key never holds it, yet two paths of one host are two
// destinations. Forward entries with one key share one circuit breaker,
// concurrency bound and rate limit. It fails on a URL that is not absolute,
// with an error that names only the URL's Destination.
func DestinationKey(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("forward url …#%s is not absolute", digest(raw))
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == map[string]string{"http": "80", "https": "443"}[scheme] {
		port = ""
	}
	if port != "" || strings.Contains(host, ":") {
		host = net.JoinHostPort(host, port)
		if port == "" {
			host = strings.TrimSuffix(host, ":")
		}
	}
	return scheme + "://" + host + pathDigest(u.EscapedPath()), nil
}

// Destination is raw as DestinationKey shows it; a text that is not an
// absolute URL shows as "…#" and the digest of the whole text, so even a
// mistyped URL's credentials stay out of errors and logs.
func Destination(raw string) string {
	if key, err := DestinationKey(raw); err == nil {
		return key
	}
	return "…#" + digest(raw)
}

// pathDigest is "/" for an empty or root path, else "/…#" and its digest.
func pathDigest(path string) string {
	if path == "" || path == "/" {
		return "/"
	}
	return "/…#" + digest(path)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// Masked is the value Headers records for each header.
const Masked = redactedValue

// Headers are the names of h, each with the value Masked: what a forward
// transform set is recorded (forward_deliveries) and shown (the console)
// by name only, since a value may be a credential (Authorization, a
// team's API key) that no name reliably marks.
func Headers(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		out[http.CanonicalHeaderKey(k)] = Masked
	}
	return out
}

package signature

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

const twilioSigHeader = "X-Twilio-Signature"

// twilioVerifier implements Twilio's request validation (twilio-go's
// client.RequestValidator): X-Twilio-Signature is base64 of
// HMAC-SHA1(auth token, URL + the form parameters sorted, each key followed
// by its value). A JSON body is not signed itself: the URL carries
// bodySHA256=<hex SHA-256 of the body>, and the signature covers the URL.
// The URL is the configured public URL with the query as received; as
// twilio-go does, it is tried with the scheme's default port added and
// with any port removed.
// A form body is parsed to compute the signature: that is Twilio's
// design, and nothing of it is used before the signature matched.
type twilioVerifier struct {
	keys []key
	// bases are the configured public URL as Twilio may have signed it,
	// computed once: as configured first (what Twilio signs when the
	// console holds the same URL), then with the scheme's default port and
	// without any port, each form once.
	bases []string
	url   string
}

// newTwilioVerifier parses the public URL once, so a delivery costs no URL
// parsing: the query as received is appended to each base.
func newTwilioVerifier(keys []key, publicURL string) *twilioVerifier {
	var bases []string
	if !strings.Contains(publicURL, "?") {
		// (A public URL with a query of its own: the forms are made of the
		// whole URL per delivery, as twilio-go does.)
		for _, b := range []string{publicURL, withDefaultPort(publicURL), withoutPort(publicURL)} {
			if !slices.Contains(bases, b) {
				bases = append(bases, b)
			}
		}
	}
	return &twilioVerifier{keys: keys, bases: bases, url: publicURL}
}

// candidates returns the URLs to check the signature against for a
// delivery with rawQuery.
func (v *twilioVerifier) candidates(rawQuery string) []string {
	if v.bases == nil {
		full := publicURL(v.url, rawQuery)
		return []string{full, withDefaultPort(full), withoutPort(full)}
	}
	out := make([]string, len(v.bases))
	for i, b := range v.bases {
		out[i] = publicURL(b, rawQuery)
	}
	return out
}

func (v *twilioVerifier) Verify(r *Request, _ time.Time) (Result, error) {
	sigText, err := header(r.Header, twilioSigHeader)
	if err != nil {
		return Result{}, err
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sigText)
	if err != nil || len(sig) != sha1.Size {
		return Result{}, malformed(twilioSigHeader, "want base64 of 20 bytes")
	}
	q, err := url.ParseQuery(r.RawQuery)
	if err != nil {
		return Result{}, malformed("query", "not a valid query string")
	}
	var (
		params []byte
		form   url.Values
	)
	bodyOK := true
	if want, isJSON := q["bodySHA256"]; isJSON {
		d := sha256.Sum256(r.Body)
		got := []byte(hex.EncodeToString(d[:]))
		bodyOK = len(want) == 1 && hmac.Equal(got, []byte(strings.ToLower(want[0])))
	} else if params, form, err = twilioParams(r.Body); err != nil {
		return Result{}, malformed("body", "not a form body, and no bodySHA256 in the URL")
	}
	var found string
	ok := false
	for _, u := range v.candidates(r.RawQuery) {
		content := append(append(make([]byte, 0, len(u)+len(params)), u...), params...)
		if id, m := matchWith(sha1.New, v.keys, [][]byte{sig}, func(m hash.Hash) { m.Write(content) }); m {
			found, ok = id, true
			break
		}
	}
	if !ok || !bodyOK {
		return Result{}, badSignature()
	}
	return Result{SecretID: found, Form: form}, nil
}

// twilioParams returns a form body's parameters as Twilio signs them,
// concatenated: by name in byte order (not the joined texts: "Reason"
// comes before "ReasonConferenceEnded" whatever their values), each name
// followed by its value; a repeated name once per value, values sorted (as
// twilio-node; twilio-go keeps one value per name). It returns the
// parameters parsed too.
func twilioParams(body []byte) ([]byte, url.Values, error) {
	if len(body) == 0 {
		return nil, nil, nil
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]byte, 0, len(body))
	for _, k := range names {
		vs := vals[k]
		if len(vs) > 1 {
			vs = append([]string(nil), vs...)
			sort.Strings(vs)
		}
		for _, v := range vs {
			out = append(append(out, k...), v...)
		}
	}
	return out, vals, nil
}

// withDefaultPort adds :443 (https) or :80 (http) where the URL has no
// port, and withoutPort removes any port, as twilio-go's addPort and
// removePort do: Twilio has signed both forms.
func withDefaultPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Port() != "" {
		return raw
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	u.Host += ":" + port
	return u.String()
}

func withoutPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = u.Hostname()
	return u.String()
}

func twilioScheme(cfg Config) (scheme, error) {
	if cfg.PublicURL == "" {
		return scheme{}, errors.New("signature: scheme \"twilio\" signs the URL: public_url is required")
	}
	return scheme{
		key: rawKey,
		verifier: func(keys []key, _ time.Duration) (Verifier, error) {
			return newTwilioVerifier(keys, cfg.PublicURL), nil
		},
		sign: func(secret []byte, r *Request, _ time.Time, _ string) error {
			var params []byte
			if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
				p, _, err := twilioParams(r.Body)
				if err != nil {
					return err
				}
				params = p
			} else {
				d := sha256.Sum256(r.Body)
				q := "bodySHA256=" + hex.EncodeToString(d[:])
				if r.RawQuery != "" {
					q = r.RawQuery + "&" + q
				}
				r.RawQuery = q
			}
			m := hmac.New(sha1.New, secret)
			m.Write([]byte(publicURL(cfg.PublicURL, r.RawQuery)))
			m.Write(params)
			r.Header.Set(twilioSigHeader, base64.StdEncoding.EncodeToString(m.Sum(nil)))
			return nil
		},
		describe: Description{
			Headers: []string{twilioSigHeader},
			Content: "HMAC-SHA1 base64 of {url} + sorted form key+value pairs (JSON: {url} with bodySHA256=hex SHA-256 of the body); key: the auth token",
		},
	}, nil
}

package redact

import (
	"net/url"
	"strings"
)

// DatabaseURL renders a PostgreSQL connection string (a postgres:// URL or
// libpq's key=value form) with each password replaced by mask: the URL's
// user info password and its password and sslpassword parameters, the
// key=value form's password and sslpassword values. A text it cannot read
// exactly as libpq would is masked whole but for its scheme, since a
// password holding '/', '#', '?' or '@' is what breaks a URL, and a broken
// one might print it: a URL that does not parse, that parses with a
// fragment or an '@' outside its user info (postgres://u:12#3@host reads
// as host "u", port "12"), or a key=value text with an unterminated quote
// or a word that is not key=value.
func DatabaseURL(s, mask string) string {
	out, _ := databaseText(s, mask)
	return out
}

// ReadableDatabaseURL reports whether DatabaseURL shows s with only its
// passwords masked, not masked whole: when it does not, a driver's error
// about s may quote the password as a host, path or database name.
func ReadableDatabaseURL(s string) bool {
	_, ok := databaseText(s, "")
	return ok
}

func databaseText(s, mask string) (string, bool) {
	if strings.Contains(s, "://") {
		return databaseURL(s, mask)
	}
	if strings.TrimSpace(s) == "" {
		return s, true
	}
	pairs, ok := parseKeywordValues(s)
	if !ok {
		return mask, false
	}
	var b strings.Builder
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := kv[1]
		if passwordKey(kv[0]) {
			v = mask
		} else {
			v = quoteKeywordValue(v)
		}
		b.WriteString(kv[0] + "=" + v)
	}
	return b.String(), true
}

func passwordKey(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

func databaseURL(s, mask string) (string, bool) {
	scheme, rest, _ := strings.Cut(s, "://")
	whole := scheme + "://" + mask
	afterAuthority := ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		afterAuthority = rest[i:]
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || u.RawFragment != "" || strings.Contains(afterAuthority, "@") {
		return whole, false
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return whole, false
	}
	changed := false
	for k := range q {
		if passwordKey(k) {
			q[k], changed = []string{"REDACTED"}, true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), "REDACTED", mask), true
}

// parseKeywordValues splits libpq's key=value form (spaces around '=',
// values single-quoted with \' and \\ escapes, or unquoted with backslash
// escapes); ok is false on anything else.
func parseKeywordValues(s string) (pairs [][2]string, ok bool) {
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return pairs, true
		}
		start := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					v.WriteByte(s[i])
					i++
					continue
				}
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, false
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		pairs = append(pairs, [2]string{key, v.String()})
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// quoteKeywordValue writes v back in the key=value form.
func quoteKeywordValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\r\f\v'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

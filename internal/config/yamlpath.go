package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// explainYAML rewrites yaml.v3's decode errors so that each names the key
// path and line it concerns and what was wanted, in the file's terms:
// "providers.demo.secret (line 4): unknown key "secret" (did you mean
// "secrets"?)", "providers.demo.tolerance (line 6): want a duration
// (examples: 90s, 5m, 72h), not a list". A value is never repeated (it
// may be a secret: issue 45), except a duration's, which is no secret.
func explainYAML(raw []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return explainSyntax(raw, err)
	}
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return errors.New("the file is not valid YAML")
	}
	keys := keysByPath()
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		msgs = append(msgs, explainOne(&root, keys, e))
	}
	return errors.New(strings.Join(msgs, "; "))
}

var (
	yamlUnknown = regexp.MustCompile(`^field (\S+) not found in type `)
	yamlCannot  = regexp.MustCompile(`^cannot unmarshal (!!\w+)(?: .*)? into (\S+)$`)
)

// explainOne is one decode error of yaml.v3 in the file's terms; it never
// returns the error's own text past its kind (yaml.v3 quotes the value).
func explainOne(root *yaml.Node, keys map[string]Key, e string) string {
	line, what := 0, e
	if m := yamlLine.FindStringSubmatch(e); m != nil {
		line, _ = strconv.Atoi(m[1])
		what = m[2]
	}
	if m := yamlUnknown.FindStringSubmatch(what); m != nil {
		path, _ := nodeAtLine(root, line, m[1], "")
		if path == "" {
			path = m[1]
		}
		parent, _ := splitPath(path)
		if i := strings.LastIndex(path, "."); i < 0 {
			parent = ""
		}
		known := childKeys(keys, genericPath(keys, parent))
		msg := fmt.Sprintf("%s (line %d): unknown key %q", path, line, m[1])
		if s := closest(m[1], known); s != "" {
			return msg + fmt.Sprintf(" (did you mean %q?)", s)
		}
		if len(known) > 0 {
			return msg + " (known keys here: " + strings.Join(known, ", ") + ")"
		}
		return msg
	}
	m := yamlCannot.FindStringSubmatch(what)
	if m == nil {
		return fmt.Sprintf("line %d: the value does not fit its key", line)
	}
	path, val := nodeAtLine(root, line, "", "")
	k := keys[genericPath(keys, path)]
	want := k.Type
	if want == "" {
		want = goTypeName(m[2])
	}
	where := fmt.Sprintf("line %d", line)
	if path != "" {
		where = fmt.Sprintf("%s (line %d)", path, line)
	}
	if want == "duration" {
		if val != nil && val.Kind == yaml.ScalarNode && !k.Secret {
			return fmt.Sprintf("%s: %q is not a duration (examples: 90s, 5m, 72h)", where, val.Value)
		}
		want = "duration (examples: 90s, 5m, 72h)"
	}
	return fmt.Sprintf("%s: want %s, not %s", where, article(want), yamlKindName(m[1]))
}

func keysByPath() map[string]Key {
	keys := map[string]Key{}
	for _, k := range Keys() {
		keys[k.Path] = k
	}
	return keys
}

// genericPath is a concrete path's key path: "providers.demo.secrets[0]"
// → "providers.<name>.secrets[]".
func genericPath(keys map[string]Key, concrete string) string {
	if concrete == "" {
		return ""
	}
	g := ""
	for _, seg := range strings.Split(concrete, ".") {
		name, list := seg, ""
		if i := strings.IndexByte(seg, '['); i >= 0 {
			name, list = seg[:i], "[]"
		}
		switch {
		case g == "":
			g = name + list
		case strings.HasPrefix(keys[g].Type, "map of"):
			g += ".<name>" + list
		default:
			g += "." + name + list
		}
	}
	return g
}

// childKeys are the names of the keys directly under parent (a key path).
func childKeys(keys map[string]Key, parent string) []string {
	var out []string
	for p := range keys {
		par, name := splitPath(p)
		if !strings.Contains(p, ".") {
			par = ""
		}
		if par == parent {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// closest is the known key nearest to name: an edit distance of at most
// a third of its length (at least 2), or one being a prefix of the other.
func closest(name string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := editDistance(name, k)
		if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) {
			d = min(d, 1)
		}
		if d <= max(2, len(name)/3) && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func goTypeName(t string) string {
	switch {
	case t == "time.Duration":
		return "duration"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "integer"
	case strings.HasPrefix(t, "float"):
		return "number"
	case t == "bool":
		return "boolean"
	case t == "string":
		return "string"
	case strings.HasPrefix(t, "[]"):
		return "list"
	}
	return "mapping"
}

func yamlKindName(tag string) string {
	switch tag {
	case "!!str":
		return "text"
	case "!!seq":
		return "a list"
	case "!!map":
		return "a mapping"
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return "a value of another type"
}

func article(t string) string {
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

// nodeAtLine is the path and value of the mapping entry on line (whose
// key is name, when name is set): the key or its scalar value is there.
func nodeAtLine(n *yaml.Node, line int, name, prefix string) (string, *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, v := nodeAtLine(c, line, name, prefix); p != "" {
				return p, v
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if (name == "" || k.Value == name) && (k.Line == line || (v.Line == line && v.Kind == yaml.ScalarNode)) {
				return path, v
			}
			if p, v := nodeAtLine(v, line, name, path); p != "" {
				return p, v
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if name == "" && c.Line == line && c.Kind == yaml.ScalarNode {
				return path, c
			}
			if p, v := nodeAtLine(c, line, name, path); p != "" {
				return p, v
			}
		}
	}
	return "", nil
}

var yamlSyntax = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// explainSyntax names the line of an unclosed quote, which is what most
// often breaks a hand-edited file: the YAML parser reports the line where
// the mapping holding it began ("line 24: did not find expected key" for
// a quote opened on line 26), so the error adds "an unclosed quote on line
// 26" when one is found at or below the reported line.
func explainSyntax(raw []byte, err error) error {
	m := yamlSyntax.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	reported, _ := strconv.Atoi(m[1])
	for i, line := range strings.Split(string(raw), "\n") {
		if i+1 < reported {
			continue
		}
		if key, open := unclosedQuote(line); open {
			// The key only: the value may be a secret.
			where := ""
			if key != "" {
				where = " in the value of " + key
			}
			return fmt.Errorf("yaml: line %d: a quote is not closed%s (the parser stopped at the mapping of line %d: %s)", i+1, where, reported, m[2])
		}
	}
	return err
}

// unclosedQuote reports whether line's value opens a quoted scalar it does
// not close, and the key before ": " ("" when none).
func unclosedQuote(line string) (key string, open bool) {
	v := strings.TrimSpace(line)
	v = strings.TrimPrefix(v, "- ")
	if k, rest, ok := strings.Cut(v, ": "); ok && !strings.ContainsAny(k, `"'{[`) {
		key, v = k, strings.TrimSpace(rest)
	}
	if v == "" || (v[0] != '"' && v[0] != '\'') {
		return key, false
	}
	q := v[0]
	for i := 1; i < len(v); i++ {
		switch {
		case q == '"' && v[i] == '\\':
			i++ // an escape inside double quotes
		case v[i] == q && q == '\'' && i+1 < len(v) && v[i+1] == '\'':
			i++ // '' inside single quotes
		case v[i] == q:
			return key, false
		}
	}
	return key, true
}

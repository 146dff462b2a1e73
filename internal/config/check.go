package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/internal/redact"
)

// Check is Parse for `gatehouse config check`: an error that names a key
// also names the line of the file the key (or, when it is missing, its
// nearest enclosing key) is on.
func Check(raw []byte, getenv func(string) string) (*Config, error) {
	cfg, err := Parse(raw, getenv)
	if err == nil {
		return cfg, nil
	}
	msg := err.Error()
	m := errPath.FindStringSubmatch(msg)
	if m == nil || strings.Contains(msg, "(line ") {
		return nil, err // no key named, or explainYAML named its line
	}
	line := LineOf(raw, m[1])
	if line == 0 {
		return nil, err
	}
	rest := strings.TrimPrefix(msg, "config: "+m[1])
	return nil, &lineError{msg: fmt.Sprintf("config: %s (line %d)%s", m[1], line, rest), err: err}
}

// lineError is a Parse error with the line of its key.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// errPath finds the key an error of Parse names: "config: <path>: …".
var errPath = regexp.MustCompile(`^config: ([A-Za-z0-9_.\[\]-]+)[:. ]`)

// LineOf is the line of raw holding the key at path ("providers.demo.
// secrets[0].value"), or of its nearest enclosing key present in raw; 0
// when raw has none of it.
func LineOf(raw []byte, path string) int {
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	n, line := root.Content[0], 0
	for _, seg := range strings.Split(path, ".") {
		name, idx := seg, -1
		if i := strings.IndexByte(seg, '['); i >= 0 && strings.HasSuffix(seg, "]") {
			name = seg[:i]
			idx, _ = strconv.Atoi(seg[i+1 : len(seg)-1])
		}
		next, keyLine := mappingValue(n, name)
		if next == nil {
			return line
		}
		line, n = keyLine, next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// mappingValue is the value of key in mapping n, and the key's line (the
// key is what an error names).
func mappingValue(n *yaml.Node, key string) (*yaml.Node, int) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}

// Redacted is c as YAML, every secret replaced by "<redacted>" (a secret
// reference, env:NAME or file:/path, is kept: it names where the secret
// is, not what it is), the password of database_url too, and durations
// written as in the file ("720h").
func Redacted(c *Config) ([]byte, error) { return RedactedWith(c, nil) }

// Applied is what a stage applies for one key where the configuration
// holds no single value (`gatehouse config check`): Value replaces the
// key's value ("" with NotApplied: written as null), Comment follows it.
type Applied struct {
	Value      string
	NotApplied bool
	Comment    string
}

// RedactedWith is Redacted with the values of applied, by concrete path
// ("providers.github.tolerance").
func RedactedWith(c *Config, applied map[string]Applied) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	info := map[string]Key{}
	for _, k := range Keys() {
		info[k.Path] = k
	}
	redactNode(&doc, "", "", info, applied)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode configuration: %w", err)
	}
	return out.Bytes(), enc.Close()
}

// Redact is the text shown for a secret value.
const Redact = "<redacted>"

func redactNode(n *yaml.Node, path, concrete string, info map[string]Key, applied map[string]Applied) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			redactNode(c, path, concrete, info, applied)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p, cp := n.Content[i].Value, n.Content[i].Value
			switch {
			case info[path].Type == "map of objects":
				p, cp = path+".<name>", concrete+"."+cp
			case path != "":
				p, cp = path+"."+p, concrete+"."+cp
			}
			v := n.Content[i+1]
			if a, ok := applied[cp]; ok && v.Kind == yaml.ScalarNode {
				v.Value, v.Tag, v.Style, v.LineComment = a.Value, "!!str", 0, a.Comment
				if a.NotApplied {
					v.Value, v.Tag = "null", "!!null"
				}
				continue
			}
			redactNode(v, p, cp, info, applied)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			cp := fmt.Sprintf("%s[%d]", concrete, i)
			if c.Kind == yaml.MappingNode {
				redactNode(c, path+"[]", cp, info, applied)
			} else {
				redactNode(c, path, cp, info, applied)
			}
		}
	case yaml.ScalarNode:
		k := info[path]
		switch {
		case path == "database_url":
			n.Value = RedactDatabaseURL(n.Value)
		case path == "providers.<name>.forward[].url":
			n.Value = redact.Destination(n.Value) // its path and query may be its credential
		case path == "providers.<name>.forward[].transform" && !isReference(n.Value):
			n.Value = redact.ScriptStrings(n.Value) // a literal may be a header's credential
		case k.Secret && n.Value != "" && !isReference(n.Value):
			n.Value, n.Style = Redact, 0
		case strings.Contains(k.Type, "duration"):
			if d, err := time.ParseDuration(n.Value); err == nil {
				n.Value = FormatDuration(d)
			}
		}
	}
}

func isReference(v string) bool {
	return strings.HasPrefix(v, "env:") || strings.HasPrefix(v, "file:")
}

// RedactDatabaseURL is a database URL or key=value connection string with its
// password replaced by "<redacted>", or all of it but the scheme when it
// does not parse as libpq would read it (redact.DatabaseURL).
func RedactDatabaseURL(s string) string { return redact.DatabaseURL(s, Redact) }

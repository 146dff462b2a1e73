package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var yamlLine = regexp.MustCompile(`line (\d+): (.*)`)

// explainYAML rewrites yaml.v3's line-numbered decode errors so that each
// names the key path it concerns, e.g. "providers.demo.tolerance (line 6):
// cannot unmarshal !!str `soon` into time.Duration".
func explainYAML(raw []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return explainSyntax(raw, err)
	}
	var root yaml.Node
	if yaml.Unmarshal(raw, &root) != nil {
		return err
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			msgs = append(msgs, e)
			continue
		}
		line, _ := strconv.Atoi(m[1])
		if path := keyAtLine(&root, line, ""); path != "" {
			msgs = append(msgs, fmt.Sprintf("%s (line %d): %s", path, line, m[2]))
		} else {
			msgs = append(msgs, e)
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// keyAtLine returns the dotted path of the mapping entry on line.
func keyAtLine(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := keyAtLine(c, line, prefix); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if k.Line == line || (v.Line == line && v.Kind == yaml.ScalarNode) {
				return path
			}
			if p := keyAtLine(v, line, path); p != "" {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if c.Line == line && c.Kind == yaml.ScalarNode {
				return path
			}
			if p := keyAtLine(c, line, path); p != "" {
				return p
			}
		}
	}
	return ""
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

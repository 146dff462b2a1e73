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
		return err
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

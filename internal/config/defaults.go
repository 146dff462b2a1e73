package config

import (
	"bytes"
	"fmt"
	"strings"
)

// DefaultsYAML is a complete configuration file: every key of Keys with
// its description as a comment, set to its default. A key without a
// single default (required, computed from other keys, or an element of
// a list or map) is written commented out, so the file parses to the
// configuration an empty file gives (`gatehouse config defaults`).
func DefaultsYAML() []byte {
	keys := Keys()
	var b bytes.Buffer
	b.WriteString("# yaml-language-server: $schema=schemas/gatehouse.config.schema.json\n")
	b.WriteString("# Every key of gatehouse's configuration at its default (`gatehouse config defaults`;\n")
	b.WriteString("# reference: docs/CONFIG.md). Keys without one default are commented out.\n")
	b.WriteString("# Secrets may be written env:NAME or file:/path.\n")
	live := liveKeys(keys)
	indent := map[string]int{} // a key's column
	started := map[string]bool{}
	for _, k := range keys {
		parent, name := splitPath(k.Path)
		col, prefix := 0, ""
		switch {
		case parent == "":
		case strings.HasSuffix(parent, "[]"):
			col = indent[strings.TrimSuffix(parent, "[]")] + 2
			prefix = "  "
			if !started[parent] {
				prefix, started[parent] = "- ", true
			}
		case strings.HasSuffix(parent, ".<name>"):
			m := strings.TrimSuffix(parent, ".<name>")
			col = indent[m] + 4
			if !started[parent] {
				started[parent] = true
				fmt.Fprintf(&b, "%s# example:\n", strings.Repeat(" ", indent[m]+2))
			}
		default:
			col = indent[parent] + 2
		}
		indent[k.Path] = col + len(prefix)
		pad := strings.Repeat(" ", col)
		if parent == "" {
			b.WriteString("\n")
		}
		for _, line := range commentLines(k) {
			fmt.Fprintf(&b, "%s# %s\n", pad, line)
		}
		value := k.Default
		if k.Section() {
			value = ""
		}
		line := prefix + name + ":"
		if value != "" {
			line += " " + value
		}
		if !live[k.Path] {
			line = "# " + line
		}
		b.WriteString(pad + line + "\n")
	}
	return b.Bytes()
}

// liveKeys are the keys DefaultsYAML writes uncommented: a key with a
// default outside lists and maps, and a section holding one.
func liveKeys(keys []Key) map[string]bool {
	live := map[string]bool{}
	for _, k := range keys {
		if k.Default == "" || strings.Contains(k.Path, "[]") || strings.Contains(k.Path, "<name>") {
			continue
		}
		live[k.Path] = true
		for p := k.Path; strings.Contains(p, "."); {
			p, _ = splitPath(p)
			live[p] = true
		}
	}
	return live
}

func commentLines(k Key) []string {
	lines := []string{k.Description}
	var more []string
	if k.DefaultNote != "" {
		more = append(more, "default: "+k.DefaultNote)
	}
	if k.Required != "" {
		more = append(more, "required "+k.Required)
	}
	if len(k.Allowed) > 0 {
		more = append(more, "one of: "+strings.Join(k.Allowed, ", "))
	}
	if k.Env != "" {
		more = append(more, "env "+k.Env)
	}
	if k.Secret {
		more = append(more, "secret: a literal, env:NAME or file:/path")
	}
	if len(more) > 0 {
		lines = append(lines, "("+strings.Join(more, "; ")+")")
	}
	return lines
}

// splitPath is a path's parent and last segment: "a.b[].c" → "a.b[]", "c".
func splitPath(path string) (string, string) {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

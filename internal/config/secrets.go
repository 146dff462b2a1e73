package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// SecretRef is one secret a configuration sets: in the file (Line > 0) or
// through an environment override (Env).
type SecretRef struct {
	// Path is the key's path in the file, e.g. "providers.stripe.secrets[0].value".
	Path string
	Line int
	Env  string
	// Reference is the env:NAME or file:/path reference, "" for a literal.
	Reference string
	// Err is why the secret does not resolve (nil when it does).
	Err error
}

// SecretRefs lists every secret of raw and of the environment overrides,
// each with ResolveSecret's verdict (`gatehouse doctor`).
func SecretRefs(raw []byte, getenv func(string) string) ([]SecretRef, error) {
	refs, _, err := secretNodes(raw, getenv)
	return refs, err
}

// ParseWithPlaceholders is Parse with every secret that does not resolve
// replaced by a placeholder of its kind, so the rest of a configuration
// can be checked while a secret is missing. Never serve with it.
func ParseWithPlaceholders(raw []byte, getenv func(string) string) (*Config, error) {
	refs, doc, err := secretNodes(raw, getenv)
	if err != nil {
		return nil, err
	}
	badEnv := map[string]string{}
	for _, r := range refs {
		if r.Err != nil && r.Env != "" {
			badEnv[r.Env] = placeholder(r.Path)
		}
	}
	if doc != nil {
		if raw, err = yaml.Marshal(doc); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	return Parse(raw, func(name string) string {
		if v, ok := badEnv[name]; ok {
			return v
		}
		return getenv(name)
	})
}

// LoadFor is Load for a subcommand that uses only some of the secrets:
// each secret whose path uses accepts must resolve (its error names the
// path), and every other one that does not resolve is replaced by a
// placeholder, so a secret the subcommand never reads (another provider's
// env: secret unset in this shell) cannot fail it. uses sees paths such as
// "providers.demo.secrets[0].value" and "kafka.sasl.password".
func LoadFor(path string, allowMissing bool, getenv func(string) string, uses func(path string) bool) (*Config, error) {
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && allowMissing:
		raw = nil
	case err != nil:
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseFor(raw, getenv, uses)
}

// ParseFor is LoadFor without the file.
func ParseFor(raw []byte, getenv func(string) string, uses func(path string) bool) (*Config, error) {
	refs, _, err := secretNodes(raw, getenv)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		if r.Err != nil && uses(r.Path) {
			return nil, fmt.Errorf("config: %s: %w", r.Path, r.Err)
		}
	}
	return ParseWithPlaceholders(raw, getenv)
}

func placeholder(path string) string {
	switch {
	case strings.HasPrefix(path, "auth.encryption_keys"):
		return base64.StdEncoding.EncodeToString(make([]byte, 32))
	case strings.Contains(path, ".forward["):
		return "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 24))
	}
	return "placeholder-for-an-unresolved-secret"
}

// secretNodes walks raw's secrets; each that does not resolve is replaced
// by a placeholder in the returned document (nil for an empty file).
func secretNodes(raw []byte, getenv func(string) string) ([]SecretRef, *yaml.Node, error) {
	keys := map[string]Key{}
	var refs []SecretRef
	for _, k := range Keys() {
		keys[k.Path] = k
		if k.Env == "" || !k.Secret {
			continue
		}
		if v := getenv(k.Env); v != "" {
			refs = append(refs, resolveRef(SecretRef{Path: k.Path, Env: k.Env}, v, getenv))
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("config: %w", explainYAML(raw, err))
	}
	if len(doc.Content) == 0 {
		return refs, nil, nil
	}
	var walk func(n *yaml.Node, generic, concrete string)
	walk = func(n *yaml.Node, generic, concrete string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				name := n.Content[i].Value
				g, c := name, name
				switch {
				case keys[generic].Type == "map of objects":
					g, c = generic+".<name>", concrete+"."+name
				case generic != "":
					g, c = generic+"."+name, concrete+"."+name
				}
				v := n.Content[i+1]
				if keys[g].Secret && v.Kind == yaml.ScalarNode && v.Value != "" {
					r := resolveRef(SecretRef{Path: c, Line: n.Content[i].Line}, v.Value, getenv)
					if r.Err != nil && g != "database_url" {
						v.Value, v.Tag, v.Style = placeholder(c), "!!str", yaml.DoubleQuotedStyle
					}
					refs = append(refs, r)
					continue
				}
				walk(v, g, c)
			}
		case yaml.SequenceNode:
			for i, e := range n.Content {
				walk(e, generic+"[]", fmt.Sprintf("%s[%d]", concrete, i))
			}
		}
	}
	walk(doc.Content[0], "", "")
	return refs, &doc, nil
}

func resolveRef(r SecretRef, value string, getenv func(string) string) SecretRef {
	if isReference(value) {
		r.Reference = value
	}
	_, r.Err = ResolveSecret(value, getenv)
	return r
}

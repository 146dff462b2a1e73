package schemas

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"gopkg.in/yaml.v3"
)

// Conditions are the envelope conditions of a fetch rule (when:) and of a
// forward entry (when:): each path (LookupPath's language) must hold its
// Condition; all must hold. In YAML a condition is a scalar (the exact
// value) or one of
//
//	{equals: v}  {in: [v1, v2]}  {exists: true|false}  {prefix: "cus_"}
//
// A value is compared as LookupPath gives it (a string, or a number as
// written), or as true/false for a boolean; "exists" asks whether the path
// holds anything but null (an object, an array, "" included).
type Conditions map[string]Condition

// Condition is one path's test; exactly one field is set.
type Condition struct {
	Equals string   `yaml:"equals,omitempty"`
	In     []string `yaml:"in,omitempty"`
	Exists *bool    `yaml:"exists,omitempty"`
	Prefix string   `yaml:"prefix,omitempty"`
}

// Equals is the Condition of an exact value.
func Equals(v string) Condition { return Condition{Equals: v} }

// UnmarshalYAML takes a scalar as Equals, else one of the forms above.
func (c *Condition) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*c = Condition{Equals: n.Value}
		return nil
	}
	type plain Condition
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = Condition(p)
	return c.validate()
}

func (c Condition) validate() error {
	set := 0
	for _, on := range []bool{c.Equals != "", len(c.In) > 0, c.Exists != nil, c.Prefix != ""} {
		if on {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("a condition is a value, or exactly one of equals, in, exists, prefix")
	}
	return nil
}

// Holds reports whether doc's value at path meets c.
func (c Condition) Holds(doc gjson.Result, path string) bool {
	if c.Exists != nil {
		at := walkPath(doc, path)
		return (at.Exists() && at.Type != gjson.Null) == *c.Exists
	}
	v, ok := LookupPath(doc, path)
	if !ok {
		switch at := walkPath(doc, path); at.Type {
		case gjson.True, gjson.False:
			v, ok = at.Raw, true
		}
	}
	switch {
	case !ok:
		return false
	case len(c.In) > 0:
		return slices.Contains(c.In, v)
	case c.Prefix != "":
		return strings.HasPrefix(v, c.Prefix)
	}
	return v == c.Equals
}

// Holds reports whether every condition holds in doc (true when none).
func (cs Conditions) Holds(doc gjson.Result) bool {
	for p, c := range cs {
		if !c.Holds(doc, p) {
			return false
		}
	}
	return true
}

// Validate checks every condition's form (a Conditions built in code).
func (cs Conditions) Validate() error {
	for p, c := range cs {
		if err := c.validate(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// String is cs as "path=value, path in [a b], …", sorted by path.
func (cs Conditions) String() string {
	keys := make([]string, 0, len(cs))
	for k := range cs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		c := cs[k]
		switch {
		case c.Exists != nil && *c.Exists:
			parts = append(parts, k+" exists")
		case c.Exists != nil:
			parts = append(parts, k+" absent")
		case len(c.In) > 0:
			parts = append(parts, fmt.Sprintf("%s in %v", k, c.In))
		case c.Prefix != "":
			parts = append(parts, k+" starts with "+c.Prefix)
		default:
			parts = append(parts, k+"="+c.Equals)
		}
	}
	return strings.Join(parts, ", ")
}

package envelope

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/schemas"
)

// path is schemas.LookupPath(s.root, path) with the root object's members
// looked up once per delivery: a kind's fields (id, type, creation time)
// mostly sit under one member (Mailgun's event-data.*), and each lookup
// walked every member of the root again, the largest included.
// TestSourcePathIsLookupPath holds the two to the same values.
func (s *source) path(path string) string {
	if !s.root.IsObject() {
		v, _ := schemas.LookupPath(s.root, path)
		return v
	}
	first, rest, nested := strings.Cut(path, ".")
	v := s.top(first)
	if !v.Exists() {
		return ""
	}
	if nested {
		out, _ := schemas.LookupPath(v, rest)
		return out
	}
	return leafText(v)
}

// leafText is LookupPath's text of the value a path ends at: a string's
// text, a number as written, "" otherwise.
func leafText(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Number:
		return v.Raw
	}
	return ""
}

// top is schemas.Member(s.root, name), remembered (the first few names:
// a kind reads its fields under one or two).
func (s *source) top(name string) gjson.Result {
	for _, m := range s.tops[:s.nTops] {
		if m.name == name {
			return m.v
		}
	}
	v := schemas.Member(s.root, name)
	if s.nTops < len(s.tops) {
		s.tops[s.nTops] = topMember{name, v}
		s.nTops++
	}
	return v
}

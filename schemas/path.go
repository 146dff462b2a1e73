package schemas

import (
	"encoding/json"
	"strings"
)

// LookupPath follows a dotted path ("data.object.id") through JSON objects,
// starting from already decoded top-level fields, and returns the string or
// number found there. Empty strings, objects, arrays and missing members
// report false. Provider configs use such paths for aggregate_id_path and
// owner_path.
func LookupPath(fields map[string]json.RawMessage, path string) (string, bool) {
	first, rest, _ := strings.Cut(path, ".")
	cur, ok := fields[first]
	for ok && rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, ".")
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return "", false
		}
		cur, ok = obj[part]
	}
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(cur, &s); err == nil {
		return s, s != ""
	}
	var n json.Number
	if err := json.Unmarshal(cur, &n); err == nil {
		return n.String(), true
	}
	return "", false
}

// LookupPathJSON is LookupPath over an undecoded JSON object.
func LookupPathJSON(doc []byte, path string) (string, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(doc, &fields) != nil {
		return "", false
	}
	return LookupPath(fields, path)
}

package schemas

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// LookupPath follows a dotted path ("data.object.id") through JSON objects
// (and arrays, where a part is a decimal index: "entry.0.id"), starting
// from a parsed value, and returns the string or number found
// there (a number as written). Empty strings, objects, arrays, null and
// missing members report false. Where an object repeats a member name the
// last one counts, as in PostgreSQL's jsonb and Go's encoding/json, so the
// value found is the one stored. Provider configs use such paths for
// aggregate_id_path and owner_path.
func LookupPath(v gjson.Result, path string) (string, bool) {
	v = walkPath(v, path)
	switch v.Type {
	case gjson.String:
		return v.Str, v.Str != ""
	case gjson.Number:
		return v.Raw, true
	}
	return "", false
}

// walkPath is the value at path in v (Exists false when there is none).
func walkPath(v gjson.Result, path string) gjson.Result {
	for part := range strings.SplitSeq(path, ".") {
		if v.IsArray() {
			if v = element(v, part); !v.Exists() {
				return gjson.Result{}
			}
			continue
		}
		if !v.IsObject() {
			return gjson.Result{}
		}
		if v = Member(v, part); !v.Exists() {
			return gjson.Result{}
		}
	}
	return v
}

// LookupPathJSON is LookupPath over an undecoded JSON document; invalid JSON
// reports false.
func LookupPathJSON(doc []byte, path string) (string, bool) {
	if !gjson.ValidBytes(doc) {
		return "", false
	}
	return LookupPath(gjson.ParseBytes(doc), path)
}

// Member returns the member name of the object obj (the last one when the
// name repeats), or a value whose Exists is false.
func Member(obj gjson.Result, name string) gjson.Result {
	var found gjson.Result
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == name {
			found = v
		}
		return true
	})
	return found
}

// Members returns Member(obj, name) for each of names in one pass.
func Members(obj gjson.Result, names ...string) []gjson.Result {
	out := make([]gjson.Result, len(names))
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, n := range names {
			if k.Str == n {
				out[i] = v
			}
		}
		return true
	})
	return out
}

// element returns the element of array a at the decimal index part.
func element(a gjson.Result, part string) gjson.Result {
	i, err := strconv.Atoi(part)
	if err != nil || i < 0 || strconv.Itoa(i) != part {
		return gjson.Result{}
	}
	var found gjson.Result
	n := 0
	a.ForEach(func(_, v gjson.Result) bool {
		if n == i {
			found = v
			return false
		}
		n++
		return true
	})
	return found
}

package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Payload search: an EventFilter may select events by what their stored
// payload holds, as a JSON containment match (Match, PostgreSQL's @>) and
// as path=value conditions in the aggregate_id_path language (Paths: a
// dotted path, a number selecting an array element). Without an index a
// search is a scan filter (ListEvents: at most ScanBudget rows a page over
// a bounded window); for a provider whose search is "indexed", with the
// provider named, each inbox partition's jsonb_path_ops GIN index of that
// provider's payloads (providers.<name>.search, kept by ingest's
// maintenance) finds the matching rows, and a page reads only them. An
// erased payload holds only its marker, so no search finds what it held.

// SearchIndexed is the Inbox.SearchIndexed of the providers ps: those
// whose search is indexed.
func SearchIndexed(ps map[string]Provider) func(string) bool {
	return func(name string) bool { return ps[name].SearchIndexed }
}

// PathValue is one path=value condition: the payload's value at Path is
// Value (a string, or the text of a number, true, false or null).
type PathValue struct {
	Path, Value string
}

// Limits of a search.
const (
	MaxMatchBytes  = 4096 // the match object's JSON
	MaxPaths       = 8    // path=value conditions of one search
	MaxPathValue   = 256  // characters of one condition's value
	maxPathSegment = 16
)

var pathSyntax = regexp.MustCompile(`^[A-Za-z0-9_$@-]+(\.[A-Za-z0-9_$@-]+)*$`)

// ParsePathValue reads "data.object.customer=cus_123" (split at the first
// '=') into a PathValue (a *FilterError "path").
func ParsePathValue(s string) (PathValue, error) {
	path, value, ok := strings.Cut(s, "=")
	if !ok {
		return PathValue{}, &FilterError{"path", "must be <dotted.path>=<value>"}
	}
	pv := PathValue{Path: path, Value: value}
	return pv, pv.validate()
}

// maxPathBytes bounds a path's text (api/openapi.yaml: maxLength 400).
const maxPathBytes = 400

func (pv PathValue) validate() error {
	if len(pv.Path) > maxPathBytes || !pathSyntax.MatchString(pv.Path) || strings.Count(pv.Path, ".") >= maxPathSegment {
		return &FilterError{"path", fmt.Sprintf("%q is not a dotted path of at most %d names or indexes and %d characters", pv.Path, maxPathSegment, maxPathBytes)}
	}
	if utf8.RuneCountInString(pv.Value) > MaxPathValue {
		return &FilterError{"path", fmt.Sprintf("a value is at most %d characters", MaxPathValue)}
	}
	if !utf8.ValidString(pv.Value) || strings.ContainsRune(pv.Value, 0) {
		return &FilterError{"path", "a value must be UTF-8 text without NUL characters (a stored payload holds none)"}
	}
	return nil
}

// Search reports whether f searches payloads.
func (f EventFilter) Search() bool { return f.Match != "" || len(f.Paths) > 0 }

func (f EventFilter) validateSearch() error {
	if f.Match != "" {
		var v any
		if len(f.Match) > MaxMatchBytes {
			return &FilterError{"match", fmt.Sprintf("at most %d bytes of JSON", MaxMatchBytes)}
		}
		if err := json.Unmarshal([]byte(f.Match), &v); err != nil {
			return &FilterError{"match", "must be a JSON object: " + err.Error()}
		}
		if _, ok := v.(map[string]any); !ok {
			return &FilterError{"match", "must be a JSON object"}
		}
		if holdsNUL(v) || !utf8.ValidString(f.Match) {
			return &FilterError{"match", "must be UTF-8 JSON without \\u0000 (a stored payload holds none)"}
		}
	}
	if len(f.Paths) > MaxPaths {
		return &FilterError{"path", fmt.Sprintf("at most %d conditions", MaxPaths)}
	}
	for _, pv := range f.Paths {
		if err := pv.validate(); err != nil {
			return err
		}
	}
	return nil
}

// holdsNUL reports whether a decoded JSON value holds a NUL character in
// a name or a string, which PostgreSQL's jsonb refuses.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, holdsNUL)
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

// searchConds are f's search conditions as SQL over inbox.payload. Each
// is a containment a GIN jsonb_path_ops index serves; a path=value
// condition also compares the value at the exact path (#>>), since
// containment reads an array index as "any element".
func (f EventFilter) searchConds(arg func(any) string) []string {
	var conds []string
	if f.Match != "" {
		conds = append(conds, "payload @> "+arg(f.Match)+"::jsonb")
	}
	for _, pv := range f.Paths {
		segs := strings.Split(pv.Path, ".")
		quoted, _ := json.Marshal(pv.Value) // JSON, not Go, quoting: a control character is \u00XX
		alts := []string{"payload @> " + arg(containment(segs, string(quoted))) + "::jsonb"}
		if typed, ok := jsonScalar(pv.Value); ok {
			alts = append(alts, "payload @> "+arg(containment(segs, typed))+"::jsonb")
		}
		conds = append(conds, "("+strings.Join(alts, " OR ")+") AND payload #>> "+arg(segs)+"::text[] = "+arg(pv.Value))
	}
	return conds
}

// containment is the JSON object holding value (JSON text) at segs: a
// number segment is an array holding it.
func containment(segs []string, value string) string {
	out := value
	for i := len(segs) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(segs[i]); err == nil {
			out = "[" + out + "]"
			continue
		}
		k, _ := json.Marshal(segs[i])
		out = "{" + string(k) + ":" + out + "}"
	}
	return out
}

// jsonScalar is v as a JSON number, true, false or null, when it is one.
func jsonScalar(v string) (string, bool) {
	switch v {
	case "true", "false", "null":
		return v, true
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil && json.Valid([]byte(v)) {
		return v, true
	}
	return "", false
}

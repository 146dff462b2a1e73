package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// errSearchInURL refuses a payload search (match=, path=) in the URL of
// GET /api/v1/events: the searched values are personal data (an e-mail
// address, a customer id), and a URL is written to every proxy's and load
// balancer's access log. POST /api/v1/events/search takes them in its body.
var errSearchInURL = badRequest("match and path are not accepted in a URL, where every proxy's access log keeps them: " +
	"send a payload search as POST /api/v1/events/search with a JSON body")

// maxSearchBody bounds the body of POST /api/v1/events/search: the match
// object (MaxMatchBytes), MaxPaths conditions and the other filters.
const maxSearchBody = 16 << 10

// SearchRequest is the body of POST /api/v1/events/search: the filters of
// GET /api/v1/events, the payload search among them, as JSON. A member
// that is present must be valid (an empty string is a 400, as on GET).
type SearchRequest struct {
	Provider        *string `json:"provider"`
	Type            *string `json:"type"`
	ProcessingState *string `json:"processing_state"`
	EventID         *string `json:"event_id"`
	Since           *string `json:"since"`
	Until           *string `json:"until"`
	// Match is a JSON object the payload must contain (PostgreSQL's @>).
	Match json.RawMessage `json:"match"`
	// Paths are path=value conditions: the payload's value at the dotted
	// path is the value (a string, or the text of a number, true, false
	// or null).
	Paths []SearchPath `json:"paths"`
	// Limit is the page size (default DefaultPageSize, at most
	// MaxPageSize); Cursor the next_cursor of the previous page.
	// A number with a zero fraction (50.0) is an integer, as JSON Schema says.
	Limit  *json.Number `json:"limit"`
	Cursor string       `json:"cursor"`
}

// SearchPath is one path=value condition of a SearchRequest.
type SearchPath struct {
	Path  string  `json:"path"`
	Value *string `json:"value"` // required: a null or missing value is a 400
}

// searchEvents answers POST /api/v1/events/search: GET /api/v1/events's
// answer for the filters in the body, so that a payload search's values
// never travel in a URL.
func (s *Server) searchEvents(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	b, err := io.ReadAll(io.LimitReader(r.Body, maxSearchBody+1))
	if err != nil {
		s.fail(w, r, badRequest("body could not be read"))
		return
	}
	if len(b) > maxSearchBody {
		s.fail(w, r, badRequest("body is larger than 16 KiB"))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
		s.fail(w, r, badRequest("body must be a JSON object of provider, type, processing_state, event_id, since, until, match, paths, limit and cursor"))
		return
	}
	if name := nullMember(b); name != "" {
		s.fail(w, r, badRequest(name+" must not be null: leave it out"))
		return
	}
	f, after, limit, err := req.filter()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerEvents(w, r, f, after, limit)
}

// filter is the EventFilter, cursor and page size of req.
func (req SearchRequest) filter() (EventFilter, *EventCursor, int, error) {
	var f EventFilter
	for name, p := range map[string]struct {
		src *string
		dst *string
	}{"provider": {req.Provider, &f.Provider}, "type": {req.Type, &f.Type}, "processing_state": {req.ProcessingState, &f.State},
		"event_id": {req.EventID, &f.EventID}} {
		if p.src != nil {
			if *p.dst = *p.src; *p.dst == "" {
				return f, nil, 0, badRequest(name + " must not be empty")
			}
		}
	}
	for name, p := range map[string]struct {
		src *string
		dst **time.Time
	}{"since": {req.Since, &f.Since}, "until": {req.Until, &f.Until}} {
		if p.src != nil {
			t, err := ParseFilterTime(name, *p.src)
			if err != nil {
				return f, nil, 0, filterProblem(err)
			}
			*p.dst = t
		}
	}
	if len(req.Match) > 0 && string(req.Match) != "null" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(req.Match, &obj) != nil {
			return f, nil, 0, badRequest("match must be a JSON object")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Match); err != nil {
			return f, nil, 0, badRequest("match must be a JSON object")
		}
		f.Match = buf.String()
	}
	for i, p := range req.Paths {
		if p.Value == nil {
			return f, nil, 0, badRequest(fmt.Sprintf("paths[%d].value must be a string", i))
		}
		pv := PathValue{Path: p.Path, Value: *p.Value}
		if err := pv.validate(); err != nil {
			return f, nil, 0, filterProblem(err)
		}
		f.Paths = append(f.Paths, pv)
	}
	if err := f.Validate(); err != nil {
		return f, nil, 0, filterProblem(err)
	}
	limit := DefaultPageSize
	if req.Limit != nil {
		n, err := req.Limit.Float64()
		if limit = int(n); err != nil || n != float64(limit) || limit < 1 || limit > MaxPageSize {
			return f, nil, 0, badRequest("limit must be an integer between 1 and 500")
		}
	}
	var after *EventCursor
	if req.Cursor != "" {
		c, err := ParseEventCursor(req.Cursor)
		if err != nil {
			return f, nil, 0, filterProblem(err)
		}
		after = c
	}
	return f, after, limit, nil
}

// nullMember names a top-level member of the search body that is null
// ("" when none is): a member present must hold a value of its type, as
// the API description says, and a null one is not left out silently.
func nullMember(body []byte) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return ""
	}
	for _, name := range []string{"provider", "type", "processing_state", "event_id", "since", "until", "match", "paths", "limit", "cursor"} {
		if v, ok := members[name]; ok && string(bytes.TrimSpace(v)) == "null" {
			return name
		}
	}
	return ""
}

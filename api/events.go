package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DefaultPageSize and MaxPageSize bound list answers.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

func pageSize(r *http.Request) (int, error) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return DefaultPageSize, nil
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, badRequest("limit must be an integer between 1 and " + strconv.Itoa(MaxPageSize))
	}
	return n, nil
}

// eventFilter reads the filters of GET /api/v1/events. A parameter that
// is present must be valid: an empty or malformed filter is a 400, never a
// silently empty (or unfiltered) list.
func eventFilter(q url.Values) (EventFilter, *EventCursor, error) {
	var f EventFilter
	if q.Has("state") && !q.Has("processing_state") { // the console's name of the same filter
		q = maps.Clone(q)
		q["processing_state"] = q["state"]
	}
	for name, dst := range map[string]*string{"provider": &f.Provider, "type": &f.Type, "processing_state": &f.State, "event_id": &f.EventID} {
		if q.Has(name) {
			if *dst = q.Get(name); *dst == "" {
				return f, nil, badRequest(name + " must not be empty")
			}
		}
	}
	for name, dst := range map[string]**time.Time{"since": &f.Since, "until": &f.Until} {
		if q.Has(name) {
			t, err := ParseFilterTime(name, q.Get(name))
			if err != nil {
				return f, nil, filterProblem(err)
			}
			*dst = t
		}
	}
	if q.Has("match") || q.Has("path") {
		return f, nil, errSearchInURL // personal data in a URL: POST /api/v1/events/search
	}
	if err := f.Validate(); err != nil {
		return f, nil, filterProblem(err)
	}
	var after *EventCursor
	if v := q.Get("cursor"); v != "" {
		c, err := ParseEventCursor(v)
		if err != nil {
			return f, nil, filterProblem(err)
		}
		after = c
	}
	return f, after, nil
}

// filterProblem is a read-model FilterError as this surface's 400.
func filterProblem(err error) error {
	var fe *FilterError
	if errors.As(err, &fe) {
		return badRequest(fe.Field + " " + fe.Reason)
	}
	return err
}

// listEvents answers inbox rows, newest first, filtered by provider, type,
// processing_state, event_id and received_at (since, until), a page at a
// time: the read model's ListEvents, as the console's events page. A
// payload search (match, path: search.go) is POST /api/v1/events/search
// (searchEvents); in the URL it is refused (errSearchInURL). A
// filter no index serves is bounded (ListEvents): the answer names the
// default window it applied (window) and a page cut short by the scan
// budget (partial).
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	limit, err := pageSize(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, after, err := eventFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerEvents(w, r, f, after, limit)
}

// answerEvents answers a page of ListEvents (listEvents, searchEvents).
func (s *Server) answerEvents(w http.ResponseWriter, r *http.Request, f EventFilter, after *EventCursor, limit int) {
	page, err := s.inbox.ListEvents(r.Context(), f, after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := map[string]any{"events": page.Events}
	if page.Next != nil {
		resp["next_cursor"] = page.Next.String()
	}
	if page.Window != nil {
		resp["window"] = page.Window
	}
	if page.Partial {
		resp["partial"] = true
	}
	writeJSON(w, http.StatusOK, resp)
}

// getEvent answers one inbox row with its stored (verified) payload.
func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	e, err := s.inbox.GetEvent(r.Context(), pathParam(r, "provider"), pathParam(r, "event_id"))
	if errors.Is(err, ErrEventNotFound) {
		err = errNotFound
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// filterParam returns query parameter k, "" when absent. A present value
// must be a valid filter value (EventFilter's rule for provider and type).
func filterParam(q url.Values, k string) (string, error) {
	if !q.Has(k) {
		return "", nil
	}
	v := q.Get(k)
	if !filterValue.MatchString(v) {
		return "", badRequest(k + " must be 1 to 128 characters of [A-Za-z0-9_.:/-]")
	}
	return v, nil
}

func decodeCursor(v string, dst any) error {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || json.Unmarshal(b, dst) != nil {
		return badRequest("cursor is malformed")
	}
	return nil
}

func encodeCursor(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

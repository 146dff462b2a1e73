package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// issueID reads the {id} path parameter; a malformed id is a 404 like an
// unknown one.
func issueID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(pathParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, errNotFound
	}
	return id, nil
}

// listIssues answers failure issues, the most recently seen first,
// filtered by status and provider, a page at a time (limit, cursor).
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	limit, err := pageSize(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	var f IssueFilter
	if f.Provider, err = filterParam(q, "provider"); err != nil {
		s.fail(w, r, err)
		return
	}
	if q.Has("status") {
		if f.Status = q.Get("status"); !slices.Contains(IssueStatuses, f.Status) {
			s.fail(w, r, badRequest("status must be open, acknowledged, resolved or muted"))
			return
		}
	}
	var after *IssueCursor
	if v := q.Get("cursor"); v != "" {
		after = &IssueCursor{}
		if err := decodeCursor(v, after); err != nil || after.ID == 0 {
			s.fail(w, r, badRequest("cursor is malformed"))
			return
		}
	}
	issues, next, err := s.inbox.ListIssues(r.Context(), f, after, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := map[string]any{"issues": issues}
	if next != nil {
		resp["next_cursor"] = next.String()
	}
	writeJSON(w, http.StatusOK, resp)
}

// getIssue answers one issue with the number of its events now dead.
func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	id, err := issueID(r)
	if err == nil {
		var is *Issue
		if is, err = s.inbox.GetIssue(r.Context(), id); err == nil {
			writeJSON(w, http.StatusOK, is)
			return
		}
	}
	if errors.Is(err, ErrIssueNotFound) {
		err = errNotFound
	}
	s.fail(w, r, err)
}

// setIssueStatus changes an issue's status ({"status": …}): acknowledged
// silences its alert, resolved closes it until the failure recurs (then it
// reopens), muted keeps it closed even when it recurs.
func (s *Server) setIssueStatus(w http.ResponseWriter, r *http.Request) {
	id, err := issueID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var body struct {
		Status string `json:"status"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || !slices.Contains(IssueStatuses, body.Status) {
		s.fail(w, r, badRequest(`the body must be {"status": "open" | "acknowledged" | "resolved" | "muted"}`))
		return
	}
	is, err := s.inbox.SetIssueStatus(r.Context(), id, body.Status)
	if errors.Is(err, ErrIssueNotFound) {
		err = errNotFound
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := CallerFrom(r.Context())
	s.cfg.Logger.Info("failure issue status changed via api", "issue", id, "status", body.Status,
		"operator_issuer", c.User.Issuer, "operator_subject", c.User.Subject)
	writeJSON(w, http.StatusOK, is)
}

// IssueReplayResult is the answer to a replay of an issue's dead events.
type IssueReplayResult struct {
	IssueID  int64           `json:"issue_id"`
	Replayed []*ReplayResult `json:"replayed"`
	Failed   []ReplayFailure `json:"failed"`
	// Skipped are the events listed dead that were no longer dead when
	// their turn came (a concurrent replay of the issue, or of the event,
	// re-enqueued them first): not re-enqueued again.
	Skipped   []ReplayFailure `json:"skipped"`
	Remaining int             `json:"remaining"` // dead events beyond MaxIssueReplay, for another call
}

// ReplayFailure is an event of an issue whose replay was refused.
type ReplayFailure struct {
	Provider string `json:"provider"`
	EventID  string `json:"event_id"`
	Error    string `json:"error"`
}

// replayIssue re-enqueues every event of the issue that is now dead (up
// to MaxIssueReplay), each through the Replayer's ReplayDead, the
// transaction of POST /events/{provider}/{event_id}/replay (a replays row
// naming the operator per event) that re-checks under the row lock that
// the event is still dead: of two concurrent replays of one issue, each
// event is re-enqueued by one, and listed as skipped by the other. It
// records the action on the issue (replayed_events, last_replayed_at,
// last_replayed_by) and logs it once.
func (s *Server) replayIssue(w http.ResponseWriter, r *http.Request) {
	id, err := issueID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.cfg.Replayer == nil {
		s.fail(w, r, errNoReplayer)
		return
	}
	if _, err := s.inbox.GetIssue(r.Context(), id); err != nil {
		if errors.Is(err, ErrIssueNotFound) {
			err = errNotFound
		}
		s.fail(w, r, err)
		return
	}
	events, total, err := s.inbox.IssueDeadEvents(r.Context(), id, MaxIssueReplay)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := CallerFrom(r.Context())
	by := "api:" + c.User.Issuer + " " + c.User.Subject
	res := IssueReplayResult{IssueID: id, Replayed: []*ReplayResult{}, Failed: []ReplayFailure{}, Skipped: []ReplayFailure{},
		Remaining: total - len(events)}
	for _, ev := range events {
		out, err := s.cfg.Replayer.ReplayDead(r.Context(), ev[0], ev[1], by)
		switch {
		case r.Context().Err() != nil:
			s.fail(w, r, r.Context().Err())
			return
		case errors.Is(err, ErrNotDead):
			res.Skipped = append(res.Skipped, ReplayFailure{Provider: ev[0], EventID: ev[1], Error: "no longer dead: replayed meanwhile or processed since"})
		case err != nil:
			_, err = s.replayAnswer(ev[0], ev[1], false, ReplayOutcome{}, err)
			res.Failed = append(res.Failed, ReplayFailure{Provider: ev[0], EventID: ev[1], Error: err.Error()})
		default:
			rr, _ := s.replayAnswer(ev[0], ev[1], false, out, nil)
			res.Replayed = append(res.Replayed, rr)
		}
	}
	if err := s.inbox.RecordIssueReplay(r.Context(), id, by, len(res.Replayed)); err != nil {
		s.cfg.Logger.Error("record failure issue replay", "issue", id, "err", err) // the events are replayed: answer so
	}
	s.cfg.Logger.Info("failure issue replayed via api", "issue", id, "replayed", len(res.Replayed), "failed", len(res.Failed),
		"skipped", len(res.Skipped), "remaining", res.Remaining, "operator_issuer", c.User.Issuer, "operator_subject", c.User.Subject)
	writeJSON(w, http.StatusAccepted, res)
}

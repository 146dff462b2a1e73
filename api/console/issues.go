package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/api"
)

// issuesPageSize is the most issues the Issues page lists.
const issuesPageSize = 200

// issuesData is the Issues page: the issues of the status chosen
// (Status "": every status), the most recently seen first.
type issuesData struct {
	Status   string
	Statuses []string
	Issues   []*api.Issue
	More     bool // more issues than the page shows: filter by status
}

// issues lists failure issues (?status= one of api.IssueStatuses, else
// every status).
func (c *Console) issues(w http.ResponseWriter, r *http.Request) {
	d := issuesData{Statuses: api.IssueStatuses}
	if s := r.URL.Query().Get("status"); slices.Contains(api.IssueStatuses, s) {
		d.Status = s
	}
	list, next, err := c.inbox.ListIssues(r.Context(), api.IssueFilter{Status: d.Status}, nil, issuesPageSize)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	d.Issues, d.More = list, next != nil
	c.render(w, r, http.StatusOK, "issues", "Issues", d)
}

// issueData is one issue's page: the issue and the statuses its buttons
// set (every one but its own).
type issueData struct {
	Issue   *api.Issue
	Changes []string
}

// issue shows one failure issue with its status buttons and the replay of
// its dead events; both go through the API (app.js, with the CSRF header).
func (c *Console) issue(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		c.fail(w, r, http.StatusNotFound, "no such issue")
		return
	}
	is, err := c.inbox.GetIssue(r.Context(), id)
	if errors.Is(err, api.ErrIssueNotFound) {
		c.fail(w, r, http.StatusNotFound, "no such issue")
		return
	}
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	d := issueData{Issue: is}
	for _, s := range api.IssueStatuses {
		if s != is.Status {
			d.Changes = append(d.Changes, s)
		}
	}
	c.render(w, r, http.StatusOK, "issue", "Issue "+strconv.FormatInt(id, 10), d)
}

package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/gatehouse/gatehouse/internal/settings"
)

// GitLab allows five resends a minute for each webhook and user
// (POST …/hooks/:hook_id/events/:hook_event_id/resend answers 429 beyond).
const (
	gitlabResendsPerMinute = 5
	gitlabAuthHeader       = "PRIVATE-TOKEN" // as the catalogue's gitlab fetch rules send api_key
)

// newResendLimiter paces a GitLab hook's resends at GitLab's documented
// limit. The Reconciler keeps it across passes: the limit is per minute,
// not per pass.
func newResendLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Every(time.Minute/gitlabResendsPerMinute), gitlabResendsPerMinute)
}

// resendBudget is how many resends one pass asks for: GitLab's rate for
// the interval between two passes (at least one minute's), so a pass
// never outlasts its interval waiting for the limit. The rest stays for
// the next pass (Result.Deferred).
func (r *Reconciler) resendBudget() int {
	return gitlabResendsPerMinute * max(1, int(r.cfg.Settings.Interval/time.Minute))
}

// hookEvent is one item of a GitLab hook's events list
// (GET /projects/:id/hooks/:hook_id/events). It carries no time.
type hookEvent struct {
	ID             int64          `json:"id"`
	RequestHeaders map[string]any `json:"request_headers"`
}

// eventID is the event id the receiver gives the event: its
// Idempotency-Key, else its X-Gitlab-Event-UUID (the catalogue's gitlab
// event_id), read from the request's headers whatever their case; "" when
// it has neither.
func (e hookEvent) eventID() string {
	for _, name := range []string{"Idempotency-Key", "X-Gitlab-Event-UUID"} {
		for k, v := range e.RequestHeaders {
			if s, ok := v.(string); ok && s != "" && strings.EqualFold(k, name) {
				return s
			}
		}
	}
	return ""
}

// resendGitLab lists the GitLab hook's events (its past 7 days, page by
// page until X-Next-Page is empty, at most max_events of them) and asks
// GitLab to resend the latest listed attempt (the highest hook event id)
// of each event whose id the inbox has not stored, once per pass, paced
// at GitLab's five resends a minute and at most resendBudget of them: the
// others are counted in Result.Deferred and resent by a later pass. The
// resent event comes back through the receiver with the hook's token and
// the same Idempotency-Key. The items carry no time, so the pass ignores
// its window: the dedupe window, at least settings.GitLabDedupeWindow,
// covers every event GitLab lists. An item listed again on a later page
// (an event GitLab logged meanwhile shifts its offset pages) is skipped;
// a page holding only items already listed is a malformed page.
func (r *Reconciler) resendGitLab(ctx context.Context, c *client, opt Options, res *Result) error {
	path := r.cfg.Settings.DeliveriesPath()
	latest := map[string]int64{} // per event id, its latest hook event id
	var order []string           // event ids, in the order listed
	seen := map[int64]bool{}
	for page, done := 1, false; !done; {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(pageSize)}}
		var items []json.RawMessage
		h, err := c.call(ctx, http.MethodGet, path, q, &items)
		if err != nil {
			return err
		}
		next := strings.TrimSpace(h.Get("X-Next-Page"))
		done = next == ""
		fresh := 0
		for i, raw := range items {
			var e hookEvent
			if err := json.Unmarshal(raw, &e); err != nil || e.ID <= 0 || e.RequestHeaders == nil {
				return fmt.Errorf("GET %s page %d: %w: a hook event without id or request_headers", path, page, ErrMalformedPage)
			}
			id := e.eventID()
			if id == "" {
				return fmt.Errorf("GET %s page %d: %w: hook event %d has neither Idempotency-Key nor X-Gitlab-Event-UUID", path, page, ErrMalformedPage, e.ID)
			}
			if seen[e.ID] {
				continue
			}
			seen[e.ID] = true
			fresh++
			res.Listed++
			if prev, ok := latest[id]; !ok {
				order = append(order, id)
				latest[id] = e.ID
			} else if e.ID > prev {
				latest[id] = e.ID
			}
			if res.Listed >= r.cfg.Settings.MaxEvents {
				res.Truncated = i < len(items)-1 || !done
				done = true
				break
			}
		}
		if len(items) > 0 && fresh == 0 {
			return fmt.Errorf("GET %s: %w: page %d repeats the hook events already listed", path, ErrMalformedPage, page)
		}
		if !done {
			n, err := strconv.Atoi(next)
			if err != nil || n <= page || len(items) == 0 {
				return fmt.Errorf("GET %s: %w: X-Next-Page %q does not move on from page %d", path, ErrMalformedPage, next, page)
			}
			page = n
		}
		if opt.Progress != nil {
			opt.Progress(*res)
		}
	}
	if res.Truncated {
		r.cfg.Logger.Warn("gitlab hook events beyond max_events were not checked: raise max_events to cover the hook's 7 days",
			"provider", r.cfg.Provider, "max_events", r.cfg.Settings.MaxEvents)
	}
	return r.resendMissing(ctx, c, path, order, latest, opt, res)
}

// resendMissing asks GitLab to resend each event id the receiver never
// stored, within the pass's budget.
func (r *Reconciler) resendMissing(ctx context.Context, c *client, path string, order []string, latest map[string]int64, opt Options, res *Result) error {
	if len(order) == 0 {
		return nil
	}
	have, err := stored(ctx, r.cfg.Pool, r.cfg.Provider, order)
	if err != nil {
		return err
	}
	budget := r.resendBudget()
	for _, id := range order {
		if have[id] {
			continue
		}
		r.missing(res, id, time.Time{}, opt)
		if opt.DryRun {
			continue
		}
		if res.Closed >= budget {
			res.Deferred++
			continue
		}
		if err := r.resends.Wait(ctx); err != nil {
			return fmt.Errorf("resend %s: gitlab's resend limit: %w", id, err)
		}
		if _, err := c.call(ctx, http.MethodPost, path+"/"+strconv.FormatInt(latest[id], 10)+"/resend", nil, nil); err != nil {
			return fmt.Errorf("resend %s: %w", id, err)
		}
		res.Closed++
		if opt.Progress != nil {
			opt.Progress(*res)
		}
	}
	if res.Deferred > 0 {
		r.cfg.Logger.Warn("gitlab resends left for the next pass (five a minute for each hook)", "provider", r.cfg.Provider,
			"resent", res.Closed, "deferred", res.Deferred)
	}
	return nil
}

// gitlabHook reports whether hook is a GitLab hook kind.
func gitlabHook(hook string) bool {
	return hook == settings.HookProject || hook == settings.HookGroup
}

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
)

// delivery is one item of a GitHub hook's deliveries list.
type delivery struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	Status      string    `json:"status"`
	StatusCode  int       `json:"status_code"`
}

// redeliver lists the hook's deliveries of the window (newest first,
// cursor pagination), and asks GitHub to redeliver the latest attempt of
// each delivery (guid: X-GitHub-Delivery) whose event the receiver never
// stored: a failed delivery, or one that never arrived. The redelivery
// comes back signed through the receiver. A delivery listed as failed
// whose event is stored (its answer was lost) needs nothing.
func (r *Reconciler) redeliver(ctx context.Context, c *client, w window, opt Options, res *Result) (time.Time, error) {
	path := r.cfg.Settings.DeliveriesPath()
	latest := map[string]delivery{} // per guid, its latest attempt
	var order []string              // guids, in the order listed
	seen := map[int64]bool{}
	cursor := ""
	var oldest time.Time
	for done := false; !done; {
		q := url.Values{"per_page": {strconv.Itoa(pageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page []json.RawMessage
		h, err := c.call(ctx, http.MethodGet, path, q, &page)
		if err != nil {
			return time.Time{}, err
		}
		next := nextCursor(h.Get("Link"))
		done = next == ""
		if next != "" && (next == cursor || len(page) == 0) {
			return time.Time{}, fmt.Errorf("GET %s: %w: the cursor did not move", path, ErrMalformedPage)
		}
		cursor = next
		older := 0 // items of the page delivered before the window
		for i, raw := range page {
			var d delivery
			if err := json.Unmarshal(raw, &d); err != nil || d.ID == 0 || d.GUID == "" || d.DeliveredAt.IsZero() {
				return time.Time{}, fmt.Errorf("GET %s: %w: a delivery without id, guid or delivered_at", path, ErrMalformedPage)
			}
			if seen[d.ID] {
				return time.Time{}, fmt.Errorf("GET %s: %w: the cursor went backwards at delivery %d", path, ErrMalformedPage, d.ID)
			}
			seen[d.ID] = true
			if d.DeliveredAt.Before(w.from) {
				older++
				continue
			}
			if d.DeliveredAt.After(w.before) {
				continue
			}
			res.Listed++
			if prev, ok := latest[d.GUID]; !ok {
				order = append(order, d.GUID)
				latest[d.GUID] = d
			} else if d.DeliveredAt.After(prev.DeliveredAt) {
				latest[d.GUID] = d
			}
			if res.Listed >= r.cfg.Settings.MaxEvents {
				res.Truncated = i < len(page)-1 || !done
				oldest, done = d.DeliveredAt, true
				break
			}
		}
		// GitHub lists the newest first: a page wholly before the window
		// ends the list
		if len(page) > 0 && older == len(page) {
			done = true
		}
		if opt.Progress != nil {
			opt.Progress(*res)
		}
	}
	if err := r.closeDeliveries(ctx, c, path, order, latest, opt, res); err != nil {
		return time.Time{}, err
	}
	return oldest, nil
}

// closeDeliveries asks for a redelivery of each guid the receiver never
// stored.
func (r *Reconciler) closeDeliveries(ctx context.Context, c *client, path string, order []string, latest map[string]delivery, opt Options, res *Result) error {
	if len(order) == 0 {
		return nil
	}
	have, err := r.storedGUIDs(ctx, order)
	if err != nil {
		return err
	}
	for _, g := range order {
		if have[g] {
			continue
		}
		d := latest[g]
		r.missing(res, g, d.DeliveredAt, opt)
		if opt.DryRun {
			continue
		}
		if _, err := c.call(ctx, http.MethodPost, path+"/"+strconv.FormatInt(d.ID, 10)+"/attempts", nil, nil); err != nil {
			return fmt.Errorf("redeliver %s: %w", g, err)
		}
		res.Closed++
		if opt.Progress != nil {
			opt.Progress(*res)
		}
	}
	return nil
}

// storedGUIDs returns which guids the receiver stored: as event id
// "<hook_id>:<guid>" when the hook id is configured (the id the receiver
// gives a GitHub delivery), else by the id's suffix.
func (r *Reconciler) storedGUIDs(ctx context.Context, guids []string) (map[string]bool, error) {
	if r.cfg.Settings.HookID <= 0 {
		return storedSuffix(ctx, r.cfg.Pool, r.cfg.Provider, guids)
	}
	prefix := strconv.FormatInt(r.cfg.Settings.HookID, 10) + ":"
	ids := make([]string, len(guids))
	for i, g := range guids {
		ids[i] = prefix + g
	}
	have, err := stored(ctx, r.cfg.Pool, r.cfg.Provider, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(have))
	for id := range have {
		out[strings.TrimPrefix(id, prefix)] = true
	}
	return out, nil
}

// nextCursor is the cursor parameter of a Link header's rel="next" URL
// (GitHub's cursor pagination); "" when there is no next page.
func nextCursor(link string) string {
	for _, part := range strings.Split(link, ",") {
		segs := strings.Split(part, ";")
		if len(segs) < 2 {
			continue
		}
		isNext := false
		for _, s := range segs[1:] {
			if strings.TrimSpace(s) == `rel="next"` {
				isNext = true
			}
		}
		if !isNext {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(segs[0]), "<>"))
		if err != nil {
			return ""
		}
		return u.Query().Get("cursor")
	}
	return ""
}

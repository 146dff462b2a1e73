package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/envelope"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/schemas/providers"
)

// pageSize is the items asked for per page: the most Stripe and GitHub
// give.
const pageSize = 100

// backfill reads the provider's event list (providers.EventList: Stripe's
// GET /v1/events with created bounds and starting_after as the cursor,
// Paddle's GET /events by id descending with after, or an hmac
// definition's), page by page, newest first, over the window, and
// stores each event the receiver does not remember through the Writer, as
// its webhook would have been stored.
func (r *Reconciler) backfill(ctx context.Context, c *client, w window, opt Options, res *Result) (time.Time, error) {
	l := r.list
	method := listMethod(l)
	seen := map[string]bool{}
	var prev time.Time
	cursor := "" // the cursor the page read was asked with
	// the next page is asked for as soon as this one is read (its cursor
	// is this page's last id), so its call overlaps this page's lookups
	// and writes: a pass takes about its calls' time, not their sum with
	// the database's
	next := r.fetchPage(ctx, c, w, "")
	for {
		pg := <-next
		next = nil
		if pg.err != nil {
			return time.Time{}, pg.err
		}
		answer := gjson.ParseBytes(pg.raw)
		items := answer.Get(l.Items)
		more, nextCursor, err := r.morePages(answer, cursor, len(items.Array()) == 0)
		if err == nil && (!items.IsArray() || (more && l.Next == "" && len(items.Array()) == 0)) {
			err = fmt.Errorf("%s %s: %w: no %s array, or %s without events", method, l.Path, ErrMalformedPage, l.Items, l.More)
		}
		if err != nil {
			return time.Time{}, err
		}
		page := items.Array()
		var ids []string
		var raws [][]byte
		var ats []time.Time
		done := !more
		after := ""
		for i, item := range page {
			id := item.Get(l.ID).String()
			at, ok := itemTime(item.Get(l.Time))
			if id == "" || !ok {
				return time.Time{}, fmt.Errorf("%s %s: %w: an event without %s or %s", method, l.Path, ErrMalformedPage, l.ID, l.Time)
			}
			if seen[id] || (!prev.IsZero() && at.After(prev)) {
				return time.Time{}, fmt.Errorf("%s %s: %w: the cursor went backwards at %s", method, l.Path, ErrMalformedPage, id)
			}
			seen[id], prev, after = true, at, id
			if at.Before(w.from) { // older than the window: the list is done
				done = true
				break
			}
			if at.After(w.before) {
				continue
			}
			ids, raws, ats = append(ids, id), append(raws, []byte(item.Raw)), append(ats, at)
			res.Listed++
			if res.Listed >= r.cfg.Settings.MaxEvents {
				res.Truncated = i < len(page)-1 || more
				done = true
				break
			}
		}
		if l.Next != "" {
			after = nextCursor
		}
		if !done {
			cursor = after
			next = r.fetchPage(ctx, c, w, after)
		}
		if err := r.closeEvents(ctx, ids, raws, ats, opt, res); err != nil {
			if next != nil {
				<-next // the call in flight ends before the pass reports its calls
			}
			return time.Time{}, err
		}
		if opt.Progress != nil {
			opt.Progress(*res)
		}
		if done {
			if res.Truncated {
				return prev, nil
			}
			return time.Time{}, nil
		}
	}
}

// page is one answer of the event list, or the call's error.
type page struct {
	raw json.RawMessage
	err error
}

// fetchPage calls the event list for the page at cursor ("": the first)
// in the background; its answer arrives on the channel. A GET list takes
// its parameters in the query string, a POST list in a JSON body.
func (r *Reconciler) fetchPage(ctx context.Context, c *client, w window, cursor string) <-chan page {
	l := r.list
	params := map[string]any{}
	for k, v := range l.Query {
		params[k] = v
	}
	if l.Limit != "" {
		params[l.Limit] = pageSize
	}
	if l.From != "" {
		params[l.From] = boundTime(l, w.from)
	}
	if l.To != "" {
		params[l.To] = boundTime(l, w.before)
	}
	if cursor != "" {
		params[l.Cursor] = cursor
	}
	method := listMethod(l)
	out := make(chan page, 1)
	if cursor != "" && l.Cursor == "" { // the answer gave the next page's URL
		go func() {
			var raw json.RawMessage
			_, err := c.follow(ctx, cursor, &raw)
			out <- page{raw: raw, err: err}
		}()
		return out
	}
	var q url.Values
	var body []byte
	if method == http.MethodPost {
		body = jsonBody(params)
	} else {
		q = url.Values{}
		for k, v := range params {
			q.Set(k, fmt.Sprint(v))
		}
	}
	go func() {
		var raw json.RawMessage
		_, err := c.send(ctx, method, l.Path, q, body, &raw)
		out <- page{raw: raw, err: err}
	}()
	return out
}

// morePages reads whether a page follows the answer, and its cursor when
// the answer gives it (EventList.Next: an empty page is the last); cursor
// is the one this page was asked with: an answer giving it again would
// list the same page for ever.
func (r *Reconciler) morePages(answer gjson.Result, cursor string, empty bool) (bool, string, error) {
	l := r.list
	if l.Next != "" {
		next := answer.Get(l.Next)
		if next.Exists() && next.Type != gjson.String {
			return false, "", fmt.Errorf("%s %s: %w: %s is not a string", listMethod(l), l.Path, ErrMalformedPage, l.Next)
		}
		if empty { // an empty page ends the list, whatever link it gives
			return false, "", nil
		}
		if next.Str != "" && next.Str == cursor {
			return false, "", fmt.Errorf("%s %s: %w: the cursor did not move", listMethod(l), l.Path, ErrMalformedPage)
		}
		return next.Str != "", next.Str, nil
	}
	more := answer.Get(l.More)
	if !more.IsBool() {
		return false, "", fmt.Errorf("%s %s: %w: no %s boolean", listMethod(l), l.Path, ErrMalformedPage, l.More)
	}
	return more.Bool(), "", nil
}

// listMethod is the list's HTTP method: GET unless POST is declared.
func listMethod(l providers.EventList) string {
	if l.Method == http.MethodPost {
		return http.MethodPost
	}
	return http.MethodGet
}

// boundTime is a window bound as the list takes it: Unix seconds, or
// RFC 3339 in UTC.
func boundTime(l providers.EventList, t time.Time) any {
	if l.TimeFormat == "rfc3339" {
		return t.UTC().Format(time.RFC3339)
	}
	return t.Unix()
}

// jsonBody is params as a JSON object, each name a dotted path into it
// ("query.sort.order": {"query": {"sort": {"order": …}}}).
func jsonBody(params map[string]any) []byte {
	root := map[string]any{}
	for k, v := range params {
		m := root
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	b, _ := json.Marshal(root) // maps of strings and numbers always encode
	return b
}

// itemTime reads an event's creation time: Unix seconds, or RFC 3339.
func itemTime(v gjson.Result) (time.Time, bool) {
	switch v.Type {
	case gjson.Number:
		if n := v.Int(); n > 0 {
			return time.Unix(n, 0), true
		}
	case gjson.String:
		if t, err := time.Parse(time.RFC3339Nano, v.Str); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// closeEvents stores the events of ids the receiver does not remember.
func (r *Reconciler) closeEvents(ctx context.Context, ids []string, raws [][]byte, ats []time.Time, opt Options, res *Result) error {
	if len(ids) == 0 {
		return nil
	}
	have, err := stored(ctx, r.cfg.Pool, r.cfg.Provider, ids)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if have[id] {
			continue
		}
		r.missing(res, id, ats[i], opt)
		if opt.DryRun {
			continue
		}
		rec, err := r.record(raws[i])
		if err != nil {
			return fmt.Errorf("event %s: %w", id, err)
		}
		if rec.EventID != id {
			return fmt.Errorf("event %s: the receiver reads the event id %q from its body: the list's id path does not name the webhook's event id", id, rec.EventID)
		}
		out, err := r.cfg.Writer.Write(ctx, rec)
		if err != nil {
			return fmt.Errorf("store event %s: %w", id, err)
		}
		if out.New {
			res.Closed++
		} else {
			res.Raced++
		}
	}
	return nil
}

// record is the inbox record of an event read from the provider's list:
// the id, type, times, payload and key the receiver gives its webhook
// (ingest/envelope reads both), with no signing secret and via
// reconcile.
func (r *Reconciler) record(raw []byte) (inbox.Record, error) {
	if r.list.Wrap != "" { // the webhook carries the item under this key
		w, err := json.Marshal(map[string]json.RawMessage{r.list.Wrap: raw})
		if err != nil {
			return inbox.Record{}, fmt.Errorf("%w: %w", ErrMalformedPage, err)
		}
		raw = w
	}
	evs, err := envelope.Parse(r.cfg.Kind, http.Header{}, raw, signature.Result{}, r.cfg.Now())
	if err != nil {
		return inbox.Record{}, err
	}
	if len(evs) != 1 {
		return inbox.Record{}, fmt.Errorf("%w: %d events in one list item", ErrMalformedPage, len(evs))
	}
	ev := evs[0]
	agg, found := inbox.AggregateID(ev.Root, r.cfg.AggregateIDPath)
	if !found {
		agg = ev.ID
	}
	rec := inbox.Record{Provider: r.cfg.Provider, EventID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt, EventTime: ev.Time,
		Payload: ev.Payload, AggregateID: agg, Topic: r.cfg.Topic, KeyLifetime: r.cfg.KeyLifetime, Via: inbox.ViaReconcile}
	if err := envelope.CheckLengths(rec); err != nil {
		return inbox.Record{}, err
	}
	return rec, nil
}

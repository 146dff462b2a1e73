package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/gatehouse/gatehouse/ingest/envelope"
	"github.com/gatehouse/gatehouse/ingest/inbox"
	"github.com/gatehouse/gatehouse/ingest/signature"
)

// pageSize is the items asked for per page: the most Stripe and GitHub
// give.
const pageSize = 100

// eventsPage is a page of Stripe's GET /v1/events: the events, newest
// first, each exactly the object a webhook of it carries.
type eventsPage struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

// backfill lists the provider's events created in the window (Stripe's
// GET /v1/events with created bounds, starting_after as the cursor),
// page by page, newest first, and stores each one the receiver does not
// remember through the Writer, as its webhook would have been stored.
func (r *Reconciler) backfill(ctx context.Context, c *client, w window, opt Options, res *Result) (time.Time, error) {
	seen := map[string]bool{}
	after := ""
	prev := int64(1<<63 - 1)
	for {
		q := url.Values{"limit": {strconv.Itoa(pageSize)},
			"created[gte]": {strconv.FormatInt(w.from.Unix(), 10)}, "created[lte]": {strconv.FormatInt(w.before.Unix(), 10)}}
		if after != "" {
			q.Set("starting_after", after)
		}
		var page eventsPage
		if _, err := c.call(ctx, http.MethodGet, "/v1/events", q, &page); err != nil {
			return time.Time{}, err
		}
		if page.Object != "list" || (page.HasMore && len(page.Data) == 0) {
			return time.Time{}, fmt.Errorf("GET /v1/events: %w: not a list, or has_more without events", ErrMalformedPage)
		}
		var ids []string
		var raws []json.RawMessage
		var ats []time.Time
		done := !page.HasMore
		for i, raw := range page.Data {
			id, created := gjson.GetBytes(raw, "id").String(), gjson.GetBytes(raw, "created").Int()
			if id == "" || created <= 0 {
				return time.Time{}, fmt.Errorf("GET /v1/events: %w: an event without id or created", ErrMalformedPage)
			}
			if seen[id] || created > prev {
				return time.Time{}, fmt.Errorf("GET /v1/events: %w: the cursor went backwards at %s", ErrMalformedPage, id)
			}
			seen[id], prev, after = true, created, id
			at := time.Unix(created, 0)
			if at.Before(w.from) { // older than the window: the list is done
				done = true
				break
			}
			if at.After(w.before) {
				continue
			}
			ids, raws, ats = append(ids, id), append(raws, raw), append(ats, at)
			res.Listed++
			if res.Listed >= r.cfg.Settings.MaxEvents {
				res.Truncated = i < len(page.Data)-1 || page.HasMore
				done = true
				break
			}
		}
		if err := r.closeEvents(ctx, ids, raws, ats, opt, res); err != nil {
			return time.Time{}, err
		}
		if opt.Progress != nil {
			opt.Progress(*res)
		}
		if done {
			if res.Truncated {
				return time.Unix(prev, 0), nil
			}
			return time.Time{}, nil
		}
	}
}

// closeEvents stores the events of ids the receiver does not remember.
func (r *Reconciler) closeEvents(ctx context.Context, ids []string, raws []json.RawMessage, ats []time.Time, opt Options, res *Result) error {
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

package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/ingest/relay"

	"github.com/go-chi/chi/v5"

	"github.com/gatehouse/gatehouse/api"
	"github.com/gatehouse/gatehouse/schemas"
)

// ProviderStats is one provider's row of the overview, in the order an
// event travels.
type ProviderStats struct {
	Provider                  string
	ReceivedHour              int64
	Pending, Retrying, Dead   int64
	OldestOpen                *time.Time // oldest acknowledged event not yet final
	Succeeded, Stale, Skipped int64      // final in the last hour
}

// Overview is the overview page's data.
type Overview struct {
	Providers    []ProviderStats
	OutboxUnsent int64
	OutboxOldest *time.Time
	Slots        []Slot
	Reconcile    []Reconciliation // each reconciled provider's last pass
	At           time.Time
}

// Slot is a replication slot the relay streams from.
type Slot struct {
	Name    string
	Active  bool
	LagByte int64
}

func (c *Console) loadOverview(r *http.Request) (*Overview, error) {
	ctx := r.Context()
	o := &Overview{At: c.cfg.Now()}
	var err error
	if o.Providers, err = c.providerStats(ctx); err != nil {
		return nil, err
	}
	if o.OutboxUnsent, o.OutboxOldest, err = relay.Backlog(ctx, c.cfg.Pool); err != nil {
		return nil, err
	}
	if o.Reconcile, err = c.reconcileStats(ctx); err != nil {
		return nil, err
	}
	srows, err := c.cfg.Pool.Query(ctx, `SELECT slot_name, active, coalesce((pg_current_wal_lsn() - confirmed_flush_lsn)::bigint, 0)
FROM pg_replication_slots WHERE database = current_database() ORDER BY slot_name`)
	if err != nil {
		return nil, err
	}
	defer srows.Close()
	for srows.Next() {
		var s Slot
		if err := srows.Scan(&s.Name, &s.Active, &s.LagByte); err != nil {
			return nil, err
		}
		o.Slots = append(o.Slots, s)
	}
	return o, srows.Err()
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	o, err := c.loadOverview(r)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", "Overview", o)
}

// overviewJSON is what the overview page polls to refresh in place.
func (c *Console) overviewJSON(w http.ResponseWriter, r *http.Request) {
	o, err := c.loadOverview(r)
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(o)
}

// EventsPage is the events page's data.
type EventsPage struct {
	Filter map[string]string
	States []string
	Events []*api.Event
	Next   template.URL // the next page ("" when none): this path and an encoded query
	// NextForm is the next page of a payload search (nil when none): the
	// fields a form posts again, its after included, so that the searched
	// values never travel in a URL.
	NextForm map[string]string
	Problem  string // a filter the page refused, said plainly
	// Window is the time range searched when the read model bounded a
	// filter no index serves (nil: none); Partial, a page cut short by the
	// scan budget (api.ListEvents).
	Window  *api.Window
	Partial bool
}

// filterKeys are the events page's filters; state is the read model's
// processing_state.
var filterKeys = []string{"provider", "type", "state", "event_id", "since", "until", "match", "path"}

// eventFilter reads the page's form: an empty field does not filter.
func eventFilter(form map[string]string) (api.EventFilter, error) {
	f := api.EventFilter{Provider: form["provider"], Type: form["type"], State: form["state"], EventID: form["event_id"], Match: form["match"]}
	if v := form["path"]; v != "" {
		pv, err := api.ParsePathValue(v)
		if err != nil {
			return f, err
		}
		f.Paths = []api.PathValue{pv}
	}
	for k, dst := range map[string]**time.Time{"since": &f.Since, "until": &f.Until} {
		if v := form[k]; v != "" {
			t, err := api.ParseFilterTime(k, v)
			if err != nil {
				return f, err
			}
			*dst = t
		}
	}
	return f, f.Validate()
}

// problemText is a read-model FilterError in the page's words (its field
// names: state for processing_state, after for cursor).
func problemText(err error) string {
	var fe *api.FilterError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	switch fe.Field {
	case "processing_state":
		return "state: " + fe.Reason
	case "cursor":
		return "after: not a page position this console issued"
	}
	return fe.Field + ": " + fe.Reason
}

// maxSearchForm bounds a posted events form (the match object is at most
// api.MaxMatchBytes).
const maxSearchForm = 16 << 10

// events is the events page. A payload search (match, path) is posted by
// the page's form and its next page by a form too: the searched values are
// personal data, and a URL is kept by every proxy's access log, so a GET
// carrying them is refused (400) naming the form. The other filters work
// in the URL as well (links from the overview and the dead letters).
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	pg := &EventsPage{Filter: map[string]string{}, States: schemas.States()}
	problem := func(err error) {
		pg.Problem = problemText(err)
		c.render(w, r, http.StatusBadRequest, "events", "Events", pg)
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxSearchForm)
		if err := r.ParseForm(); err != nil {
			problem(errors.New("the form could not be read (at most 16 KiB)"))
			return
		}
		q = r.PostForm
	} else if q.Has("match") || q.Has("path") {
		problem(errors.New("match, path: a payload search is not accepted in a URL, where every proxy's access log keeps it; use the form, which posts it"))
		return
	}
	for _, k := range filterKeys {
		pg.Filter[k] = strings.TrimSpace(q.Get(k))
	}
	if pg.Filter["state"] == "" { // the API's name of the same filter
		pg.Filter["state"] = strings.TrimSpace(q.Get("processing_state"))
	}
	f, err := eventFilter(pg.Filter)
	if err != nil {
		problem(err)
		return
	}
	var after *api.EventCursor
	if v := q.Get("after"); v != "" {
		if after, err = api.ParseEventCursor(v); err != nil {
			problem(err)
			return
		}
	}
	const limit = 50
	page, err := c.inbox.ListEvents(r.Context(), f, after, limit)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	if page.Next != nil {
		next := url.Values{}
		for k, v := range pg.Filter {
			if v != "" {
				next.Set(k, v)
			}
		}
		next.Set("after", page.Next.String())
		if f.Search() {
			pg.NextForm = map[string]string{}
			for k := range next {
				pg.NextForm[k] = next.Get(k)
			}
		} else {
			pg.Next = template.URL("/console/events?" + next.Encode()) // url.Values.Encode: safe in an href
		}
	}
	pg.Events, pg.Window, pg.Partial = page.Events, page.Window, page.Partial
	c.render(w, r, http.StatusOK, "events", "Events", pg)
}

// EventDetail is the event page's data.
type EventDetail struct {
	*api.Event
	Payload string // indented JSON
	Replays []api.Replay
	Changes []api.Change
	// TraceURL links the event's trace (Config.TraceURL); "" : no link.
	TraceURL string
	// Forwards is what each forward destination took (forwardView).
	Forwards []ForwardView
}

func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	provider, id := chi.URLParam(r, "provider"), chi.URLParam(r, "event_id")
	if r.URL.RawPath != "" { // ids with '/' or '?' arrive escaped
		provider, id = unescape(provider), unescape(id)
	}
	ctx := r.Context()
	e, err := c.inbox.GetEvent(ctx, provider, id)
	if errors.Is(err, api.ErrEventNotFound) {
		c.fail(w, r, http.StatusNotFound, "no stored event "+id+" of provider "+provider)
		return
	}
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	d := &EventDetail{Event: e}
	if e.TraceID != "" && c.cfg.TraceURL != "" {
		d.TraceURL = strings.ReplaceAll(c.cfg.TraceURL, "{trace_id}", e.TraceID)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, e.Payload, "", "    ") == nil {
		d.Payload = pretty.String()
	} else {
		d.Payload = string(e.Payload)
	}
	if d.Replays, err = c.inbox.Replays(ctx, provider, id); err != nil {
		c.dbError(w, r, err)
		return
	}
	if d.Changes, err = c.inbox.Changes(ctx, provider, id); err != nil {
		c.dbError(w, r, err)
		return
	}
	forwards, err := c.inbox.Forwards(ctx, provider, id)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	for _, f := range forwards {
		d.Forwards = append(d.Forwards, forwardView(f))
	}
	c.render(w, r, http.StatusOK, "event", "Event "+id, d)
}

// DeadGroup is one group of dead events (provider, type, error class).
type DeadGroup struct {
	Provider, Type, Class string
	Count                 int64
	Events                []*api.Event
}

func (c *Console) dead(w http.ResponseWriter, r *http.Request) {
	events, err := c.inbox.DeadEvents(r.Context(), 2000)
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	var groups []*DeadGroup
	for _, e := range events {
		class := ""
		if e.LastErrorClass != nil {
			class = *e.LastErrorClass
		}
		if n := len(groups); n == 0 || groups[n-1].Provider != e.Provider || groups[n-1].Type != e.Type || groups[n-1].Class != class {
			groups = append(groups, &DeadGroup{Provider: e.Provider, Type: e.Type, Class: class})
		}
		g := groups[len(groups)-1]
		g.Count++
		g.Events = append(g.Events, e)
	}
	c.render(w, r, http.StatusOK, "dead", "Dead letters", groups)
}

// parked lists the keys parked for forward destinations ordered per
// object, each held one with its replay and release buttons (through the
// API: POST /api/v1/events/{provider}/{event_id}/replay, /parked/release).
// The page first groups them by cause (the heads' error, and the failure
// issue that holds it).
func (c *Console) parked(w http.ResponseWriter, r *http.Request) {
	keys, err := c.inbox.ListParked(r.Context())
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	causes, err := c.inbox.ListParkedCauses(r.Context())
	if err != nil {
		c.dbError(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "parked", "Parked keys", parkedData{Causes: causes, Keys: keys})
}

// parkedData is the Parked page's.
type parkedData struct {
	Causes []*api.ParkedCause
	Keys   []*api.ParkedKey
}

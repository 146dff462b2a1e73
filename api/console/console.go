// Package console is the operator's console at /console: what arrived per
// provider and stage, the events with their filters and detail, and the
// dead letters with replay, and the failure issues with their status and
// the replay of their dead events. It is served by `serve` behind the browser
// login, for operators only (the same operator list as /api/v1/events),
// server-rendered with html/template under a strict Content-Security-Policy.
// Replays go through the API (POST /api/v1/events/{provider}/{id}/replay
// with the API's CSRF header), so a replay from the console is the same
// transaction, recorded with the operator's identity, as one from the CLI.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/api"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console is mounted.
const Prefix = "/console"

// csp allows only the console's own script and style.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config holds the console's dependencies.
type Config struct {
	// Pool reads the inbox, outbox, slot and effect log. Required.
	Pool *pgxpool.Pool
	// Sessions identifies the signed-in browser user. Required.
	Sessions api.SessionStore
	// Operators may use the console (issuer, subject), as for the API.
	Operators []api.User
	// SignIn is the login page (default /signin); it receives ?next=.
	SignIn string
	// Logger nil: slog.Default().
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TraceURL is the trace viewer's URL of one trace, {trace_id} replaced
	// by the event's (config tracing.ui_url); empty: the id is shown as text.
	TraceURL string
	// SearchIndexed reports the providers whose payloads are indexed for
	// search (api.SearchIndexed); nil: none.
	SearchIndexed func(provider string) bool
}

// Console serves the pages.
type Console struct {
	cfg       Config
	inbox     api.Inbox
	operators map[api.User]bool
	pages     map[string]*template.Template
}

// New builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.Pool == nil || cfg.Sessions == nil {
		return nil, errors.New("console: pool and sessions are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SignIn == "" {
		cfg.SignIn = "/signin"
	}
	c := &Console{cfg: cfg, inbox: api.Inbox{Pool: cfg.Pool, SearchIndexed: cfg.SearchIndexed}, operators: map[api.User]bool{}, pages: map[string]*template.Template{}}
	for _, op := range cfg.Operators {
		c.operators[op] = true
	}
	funcs := template.FuncMap{"ago": func(t time.Time) string { return ago(cfg.Now().Sub(t)) }, "pathEscape": url.PathEscape,
		"scanBudget": func() int { return api.ScanBudget }}
	for _, page := range []string{"overview", "events", "event", "dead", "parked", "issues", "issue", "charts", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		c.pages[page] = t
	}
	return c, nil
}

// Routes mounts the console under Prefix.
func (c *Console) Routes(r chi.Router) {
	r.Route(Prefix, func(r chi.Router) {
		r.Use(c.headers)
		r.Handle("/static/*", http.StripPrefix(Prefix, http.FileServerFS(staticFS)))
		r.Group(func(r chi.Router) {
			r.Use(c.operatorOnly)
			r.Get("/", c.overview)
			r.Get("/overview.json", c.overviewJSON)
			r.Get("/events", c.events)
			r.Post("/events", c.events) // the events form: a payload search never in a URL
			r.Get("/events/{provider}/{event_id}", c.event)
			r.Get("/dead", c.dead)
			r.Get("/parked", c.parked)
			r.Get("/issues", c.issues)
			r.Get("/issues/{id}", c.issue)
			r.Get("/charts", c.charts)
		})
	})
}

func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

type operatorKey struct{}

// operatorOnly sends a visitor without a session to the sign-in page and
// answers 403 to a signed-in user who is not an operator.
func (c *Console) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, user, err := c.cfg.Sessions.SessionFromRequest(r)
		if errors.Is(err, api.ErrNoSession) {
			http.Redirect(w, r, c.cfg.SignIn+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if err != nil {
			c.fail(w, r, http.StatusServiceUnavailable, "sessions are unavailable; try again")
			return
		}
		if !c.operators[api.User{Issuer: user.Issuer, Subject: user.Subject}] {
			c.fail(w, r, http.StatusForbidden, "the operator role is required (api.operators in the configuration)")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, user)))
	})
}

// page is what every template receives.
type page struct {
	Title, Nav string
	User       api.User
	Who        string // the signed-in operator's name or e-mail, else the subject
	Data       any
}

// displayNamer is the optional part of a session store that names the
// signed-in user (api.AuthSessions: the name or e-mail from the OP).
type displayNamer interface {
	DisplayName(r *http.Request) string
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	u, _ := r.Context().Value(operatorKey{}).(api.User)
	who := u.Subject
	if dn, ok := c.cfg.Sessions.(displayNamer); ok && u.Subject != "" {
		if n := dn.DisplayName(r); n != "" {
			who = n
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.pages[name].Execute(w, page{Title: title, Nav: name, User: u, Who: who, Data: data}); err != nil {
		c.cfg.Logger.Warn("console: render", "page", name, "err", err)
	}
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", http.StatusText(status), msg)
}

func (c *Console) dbError(w http.ResponseWriter, r *http.Request, err error) {
	c.cfg.Logger.Warn("console: query", "path", r.URL.Path, "err", err)
	c.fail(w, r, http.StatusServiceUnavailable, "the database did not answer; try again")
}

// ago formats a duration for people: 3 s, 4 min, 2 h, 5 d.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "0 s"
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < time.Hour:
		return d.Truncate(time.Minute).String()
	case d < 48*time.Hour:
		return d.Truncate(time.Hour).String()
	default:
		return fmt.Sprintf("%d d", int(d.Hours()/24))
	}
}

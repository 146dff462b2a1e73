package auth

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
)

//go:embed templates/*.html
var templateFS embed.FS

// Kinds of error page; each is a template "err-<kind>" in templates/errors.html.
const (
	pageStateMismatch    = "state_mismatch"
	pageLoginExpired     = "login_expired"
	pageIssuerMismatch   = "issuer_mismatch"
	pageVerifyFailed     = "verify_failed"
	pageOPUnavailable    = "op_unavailable"
	pageRedirectMismatch = "redirect_uri_mismatch"
	pageInvalidGrant     = "invalid_grant"
	pageAccessDenied     = "access_denied"
	pageMisconfigured    = "misconfigured"
	pageOPError          = "op_error"
	pageInternal         = "internal"
)

var pageTitles = map[string]string{
	pageStateMismatch: "Sign-in failed", pageLoginExpired: "Sign-in expired", pageIssuerMismatch: "Sign-in failed",
	pageVerifyFailed: "Sign-in failed", pageOPUnavailable: "Identity provider unavailable",
	pageRedirectMismatch: "Sign-in misconfigured", pageInvalidGrant: "Sign-in expired", pageAccessDenied: "Sign-in cancelled",
	pageMisconfigured: "Sign-in misconfigured", pageOPError: "Sign-in failed", pageInternal: "Error",
}

type pages struct{ t *template.Template }

func newPages() (*pages, error) {
	t, err := template.ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("auth: templates: %w", err)
	}
	return &pages{t: t}, nil
}

// render writes the page name (with data) inside the layout.
func (p *pages) render(w http.ResponseWriter, status int, title, name string, data any) error {
	var body bytes.Buffer
	if err := p.t.ExecuteTemplate(&body, name, data); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := p.t.ExecuteTemplate(&out, "layout", map[string]any{"Title": title, "Body": template.HTML(body.String())}); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: that turns Origin into "null" and breaks the CSRF check
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_, err := w.Write(out.Bytes())
	return err
}

// errorPage renders the login error page of kind.
func (s *Service) errorPage(w http.ResponseWriter, r *http.Request, status int, kind, corr string, data map[string]string) {
	if data == nil {
		data = map[string]string{}
	}
	var body bytes.Buffer
	d := map[string]any{"Kind": kind, "Correlation": corr, "Data": data}
	if err := s.pages.t.ExecuteTemplate(&body, "err-"+kind, d); err != nil {
		s.log.Error("render error page", "kind", kind, "err", err)
		http.Error(w, "sign-in failed", status)
		return
	}
	d["Body"] = template.HTML(body.String())
	var card bytes.Buffer
	if err := s.pages.t.ExecuteTemplate(&card, "error", d); err != nil {
		http.Error(w, "sign-in failed", status)
		return
	}
	w.Header().Set("X-Correlation-ID", corr)
	if err := s.pages.render(w, status, pageTitles[kind], "raw", template.HTML(card.String())); err != nil {
		s.log.Error("render error page", "kind", kind, "err", err)
	}
}

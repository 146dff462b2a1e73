package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"

	"strings"
	"time"

	"golang.org/x/oauth2"
)

// maxIATSkew is how far in the future an ID token's iat may lie.
const maxIATSkew = 5 * time.Minute

// identity is what a verified login yields.
type identity struct {
	user             User
	email, name, sid string
	raw              string
}

// verifyLogin validates the ID token of a token response: signature against
// the OP's JWKS (unknown kid: the key set is re-fetched, so key rotation
// works), allowed algorithm (never "none"), iss, aud, exp (go-oidc), then sub
// and iat present, iat not in the future, the nonce equal to the stored one,
// and azp equal to the client when present or when there are several
// audiences. When UserInfo is enabled its sub must equal the ID token's.
func (s *Service) verifyLogin(ctx context.Context, tok *oauth2.Token, nonce string) (*identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, errors.New("token response has no id_token")
	}
	idt, err := s.verifier.Verify(s.opContext(ctx), raw)
	if err != nil {
		return nil, fmt.Errorf("id_token: %w", err)
	}
	var claims struct {
		Sub   string `json:"sub"`
		Iat   any    `json:"iat"`
		Azp   string `json:"azp"`
		Sid   string `json:"sid"`
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("id_token claims: %w", err)
	}
	if idt.Subject == "" || claims.Sub == "" {
		return nil, errors.New("id_token: sub missing")
	}
	if claims.Iat == nil || idt.IssuedAt.IsZero() {
		return nil, errors.New("id_token: iat missing")
	}
	if idt.IssuedAt.After(s.now().Add(maxIATSkew)) {
		return nil, errors.New("id_token: iat in the future")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return nil, errors.New("id_token: nonce does not match this login")
	}
	if (len(idt.Audience) > 1 || claims.Azp != "") && claims.Azp != s.cfg.ClientID {
		return nil, fmt.Errorf("id_token: azp %q is not this client (aud %v)", claims.Azp, idt.Audience)
	}
	id := &identity{user: User{Issuer: idt.Issuer, Subject: idt.Subject}, email: claims.Email, name: claims.Name,
		sid: claims.Sid, raw: raw}
	if !s.cfg.SkipUserInfo && s.meta.UserInfo != "" {
		uctx, cancel := context.WithTimeout(s.opContext(ctx), 10*time.Second)
		defer cancel()
		ui, err := s.provider.UserInfo(uctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, fmt.Errorf("userinfo: %w", err)
		}
		if ui.Subject != idt.Subject {
			return nil, errors.New("userinfo: sub differs from the id_token's")
		}
		var extra struct {
			Name string `json:"name"`
		}
		_ = ui.Claims(&extra)
		if id.email == "" {
			id.email = ui.Email
		}
		if id.name == "" {
			id.name = extra.Name
		}
	}
	return id, nil
}

// deviceOf summarises a User-Agent as "Browser on OS" for the account page.
func deviceOf(ua string) string {
	browser := "Unknown browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"HeadlessChrome/", "Headless Chrome"},
		{"Chromium/", "Chromium"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}, {"curl/", "curl"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	osName := ""
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"Windows", "Windows"},
		{"Mac OS X", "macOS"}, {"CrOS", "ChromeOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			osName = o.name
			break
		}
	}
	if osName == "" {
		return browser
	}
	return browser + " on " + osName
}

package bearer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// introspectionResponse is the part of an RFC 7662 answer gatehouse reads.
type introspectionResponse struct {
	Active    bool            `json:"active"`
	Scope     json.RawMessage `json:"scope"`
	ClientID  string          `json:"client_id"`
	TokenType string          `json:"token_type"`
	Exp       *float64        `json:"exp"`
	Nbf       *float64        `json:"nbf"`
	Iat       *float64        `json:"iat"`
	Sub       string          `json:"sub"`
	Aud       json.RawMessage `json:"aud"`
	Iss       string          `json:"iss"`
}

// introspect checks an opaque token at the introspection endpoint of each
// issuer that has one configured, in configuration order, and accepts the
// first active answer. The answer must be active, have a sub, and, when it
// names them, the configured issuer, an audience containing this API's
// identifier or gatehouse's introspection client ID (the OP answered active
// to that client, so the token is meant for it), and valid exp/nbf/iat.
func (v *Verifier) introspect(ctx context.Context, token string) (*Principal, error) {
	var lastErr error = invalidToken("not a JWT and no introspection endpoint is configured")
	for _, st := range v.order {
		if st.cfg.Introspection.ClientID == "" {
			continue
		}
		p, err := v.introspectAt(ctx, st, token)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func (v *Verifier) introspectAt(ctx context.Context, st *issuerState, token string) (*Principal, error) {
	endpoint := st.introURL
	if endpoint == "" {
		doc, err := st.disc.get(ctx)
		if err != nil {
			return nil, unavailable("the issuer's metadata cannot be fetched", err)
		}
		if doc.IntrospectionEndpoint == "" {
			return nil, unavailable("the issuer advertises no introspection endpoint", nil)
		}
		endpoint = doc.IntrospectionEndpoint
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable("introspection request", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: client id and secret are form-urlencoded before Basic.
	req.SetBasicAuth(url.QueryEscape(st.cfg.Introspection.ClientID), url.QueryEscape(string(st.cfg.Introspection.ClientSecret)))
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		v.m.introspections.WithLabelValues("error").Inc()
		return nil, unavailable("the introspection endpoint cannot be reached", errors.New(redactURLError(err)))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		v.m.introspections.WithLabelValues("error").Inc()
		return nil, unavailable("the introspection endpoint failed", fmt.Errorf("status %d", resp.StatusCode))
	}
	var ir introspectionResponse
	if err := json.Unmarshal(b, &ir); err != nil {
		v.m.introspections.WithLabelValues("error").Inc()
		return nil, unavailable("the introspection answer is not JSON", err)
	}
	v.m.introspections.WithLabelValues("ok").Inc()
	if !ir.Active {
		return nil, invalidToken("token is not active")
	}
	if ir.Iss != "" && ir.Iss != st.cfg.Issuer {
		return nil, invalidToken("untrusted issuer")
	}
	if ir.Sub == "" {
		return nil, invalidToken("token has no sub")
	}
	if strings.EqualFold(ir.TokenType, "id_token") {
		return nil, invalidToken("an ID token is not an access token")
	}
	aud := parseScopes(ir.Aud) // a string or an array of strings
	if len(aud) > 0 && !v.audienceOK(aud, st.cfg.Introspection.ClientID) {
		return nil, invalidToken("wrong audience")
	}
	exp := unixPtr(ir.Exp)
	if exp == nil {
		// RFC 7662 makes exp optional; active=true is the OP's word that it is valid now.
		t := v.cfg.Now().Add(time.Minute)
		exp = &t
	}
	if err := v.checkTimes(exp, unixPtr(ir.Nbf), unixPtr(ir.Iat)); err != nil {
		return nil, err
	}
	return &Principal{
		Issuer: st.cfg.Issuer, Subject: ir.Sub, ClientID: ir.ClientID,
		Scopes: st.mapScopes(parseScopes(ir.Scope)), Audience: aud, Expiry: *exp, Method: "introspection",
	}, nil
}

func unixPtr(f *float64) *time.Time {
	if f == nil {
		return nil
	}
	t := time.Unix(int64(*f), 0)
	return &t
}

// redactURLError keeps the error text of a failed request without the
// request URL's query (which never carries the token here, but stays out of
// logs on principle).
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

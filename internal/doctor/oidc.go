package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gatehouse/gatehouse/internal/config"
)

// oidcChecks: for the login issuer (auth.issuer) and every bearer issuer
// of api.issuers, the discovery document answers and names the issuer
// exactly, and its JWKS (or the configured jwks_url) holds keys.
func oidcChecks(ctx context.Context, o Options, cfg *config.Config) []Check {
	var out []Check
	if !cfg.Auth.Enabled() && len(cfg.API.Issuers) == 0 {
		return []Check{skip("OpenID Provider discovery and JWKS reachable",
			"no OpenID Provider in this configuration and environment: auth.issuer (GATEHOUSE_AUTH_ISSUER) and api.issuers are empty, so browser login and bearer tokens are off. "+
				"An OP given only through environment variables (make run exports GATEHOUSE_AUTH_ISSUER for its own process) is checked when doctor runs with the same variables")}
	}
	if cfg.Auth.Enabled() {
		out = append(out, issuerCheck(ctx, o, "auth.issuer", cfg.Auth.Issuer, ""))
	}
	for i, is := range cfg.API.Issuers {
		out = append(out, issuerCheck(ctx, o, fmt.Sprintf("api.issuers[%d]", i), is.Issuer, is.JWKSURL))
	}
	return out
}

func issuerCheck(ctx context.Context, o Options, key, issuer, jwksURL string) Check {
	c := Check{Name: "OpenID Provider " + issuer + " (" + key + ") discovery and JWKS reachable"}
	disc := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, o.HTTP, disc, &doc); err != nil {
		c.Detail = err.Error()
		c.Fix = "check " + key + " (exactly the OP's issuer, trailing slash included) and that this host reaches the OP (proxy, DNS, TLS roots)"
		return c
	}
	if doc.Issuer != issuer {
		c.Detail = fmt.Sprintf("the discovery document's issuer is %q", doc.Issuer)
		c.Fix = "set " + key + " to " + doc.Issuer + " exactly: tokens are checked against it byte for byte"
		return c
	}
	if jwksURL == "" {
		jwksURL = doc.JWKSURI
	}
	var keys struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, o.HTTP, jwksURL, &keys); err != nil {
		c.Detail = "JWKS " + err.Error()
		c.Fix = "check that this host reaches the OP's jwks_uri (" + jwksURL + ")"
		return c
	}
	if len(keys.Keys) == 0 {
		c.Detail = "JWKS " + jwksURL + " holds no key"
		c.Fix = "configure a signing key at the OP"
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("%d keys at %s", len(keys.Keys), jwksURL)
	return c
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: not JSON: %w", u, err)
	}
	return nil
}

package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// hostileOP is an in-test OpenID Provider whose every answer can be bent to
// reproduce the OpenID Foundation's Basic RP certification cases. Its
// /authorize answers at once (no login form) with a code for the fixed user.
type hostileOP struct {
	t   testing.TB
	srv *httptest.Server

	mu sync.Mutex
	// keys published in the JWKS; sign signs ID and logout tokens.
	published []jose.JSONWebKey
	sign      *rsa.PrivateKey
	signKid   string // "" omits the kid header
	algNone   bool
	// idClaims edits the ID token claims before signing.
	idClaims func(map[string]any)
	// userinfoSub overrides the UserInfo sub.
	userinfoSub string
	// issParam: advertise RFC 9207 and send this value as iss ("" = omit).
	advertiseIss bool
	issParam     string
	// tokenError forces the token endpoint's authorization_code answer.
	tokenError string
	// authorizeError makes /authorize redirect back with this error.
	authorizeError string
	accessTTL      time.Duration
	familyRevoked  bool
	// postOnly advertises only client_secret_post and, like Keycloak with
	// such a client, refuses header authentication after marking the code
	// used: a client that then retries with the same code gets invalid_grant.
	postOnly bool
	scopes   []string // the scope parameter of every authorize request

	codes        map[string]*opCode
	authorizes   int
	codeUses     map[string]int
	refreshSeen  map[string]int
	currentRT    string
	revoked      []string
	verifiersGot []string
	issued       []string // every token string handed out (for the log test)
	jwksFetches  int
}

type opCode struct {
	clientID, redirectURI, challenge, nonce string
}

const (
	hostileClientID = "rp-client"
	hostileSecret   = "rp-secret-9f1c"
	hostileSubject  = "user-42"
)

func newRSAKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func jwk(k *rsa.PrivateKey, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}
}

func startHostileOP(t testing.TB) *hostileOP {
	k := newRSAKey(t)
	op := &hostileOP{t: t, sign: k, signKid: "k1", published: []jose.JSONWebKey{jwk(k, "k1")},
		codes: map[string]*opCode{}, codeUses: map[string]int{}, refreshSeen: map[string]int{}, accessTTL: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", op.discovery)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		op.mu.Lock()
		defer op.mu.Unlock()
		op.jwksFetches++
		writeJSON(w, 200, jose.JSONWebKeySet{Keys: op.published})
	})
	mux.HandleFunc("GET /authorize", op.authorize)
	mux.HandleFunc("POST /token", op.token)
	mux.HandleFunc("GET /userinfo", op.userinfo)
	mux.HandleFunc("POST /revoke", op.revoke)
	op.srv = httptest.NewServer(mux)
	t.Cleanup(op.srv.Close)
	return op
}

func (op *hostileOP) issuer() string { return op.srv.URL }

func (op *hostileOP) set(f func(op *hostileOP)) {
	op.mu.Lock()
	defer op.mu.Unlock()
	f(op)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (op *hostileOP) discovery(w http.ResponseWriter, r *http.Request) {
	op.mu.Lock()
	defer op.mu.Unlock()
	iss := op.issuer()
	writeJSON(w, 200, map[string]any{
		"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/token",
		"userinfo_endpoint": iss + "/userinfo", "jwks_uri": iss + "/jwks", "revocation_endpoint": iss + "/revoke",
		"end_session_endpoint": iss + "/end_session", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported": []string{"S256"}, "backchannel_logout_supported": true,
		"authorization_response_iss_parameter_supported": op.advertiseIss,
		"token_endpoint_auth_methods_supported":          op.authMethods(),
	})
}

func (op *hostileOP) authMethods() []string {
	if op.postOnly {
		return []string{"client_secret_post"}
	}
	return []string{"client_secret_basic", "client_secret_post"}
}

func (op *hostileOP) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	op.mu.Lock()
	defer op.mu.Unlock()
	op.authorizes++
	op.scopes = append(op.scopes, q.Get("scope"))
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("state") == "" || q.Get("nonce") == "" || q.Get("client_id") != hostileClientID {
		http.Error(w, "bad authorize request: "+r.URL.RawQuery, 400)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	if op.issParam != "" {
		v.Set("iss", op.issParam)
	}
	if op.authorizeError != "" {
		v.Set("error", op.authorizeError)
	} else {
		code := randomToken(16)
		op.codes[code] = &opCode{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"),
			challenge: q.Get("code_challenge"), nonce: q.Get("nonce")}
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (op *hostileOP) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.postOnly {
		if ok { // header authentication: refused, and the code is spent
			op.codeUses[r.PostForm.Get("code")]++
			writeJSON(w, 401, map[string]string{"error": "invalid_client", "error_description": "client_secret_basic is not allowed"})
			return
		}
		id, secret, ok = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), true
	}
	if !ok || id != hostileClientID || secret != hostileSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	f := r.PostForm
	switch f.Get("grant_type") {
	case "authorization_code":
		code := f.Get("code")
		op.codeUses[code]++
		op.verifiersGot = append(op.verifiersGot, f.Get("code_verifier"))
		if op.tokenError != "" {
			writeJSON(w, 400, map[string]string{"error": op.tokenError, "error_description": "forced by test"})
			return
		}
		c, ok := op.codes[code]
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || op.codeUses[code] > 1 || c.redirectURI != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "code invalid, reused or verifier wrong"})
			return
		}
		writeJSON(w, 200, op.issueTokens(c.nonce, true))
	case "refresh_token":
		rt := f.Get("refresh_token")
		op.refreshSeen[rt]++
		if op.familyRevoked || rt != op.currentRT {
			op.familyRevoked = true // reuse of a rotated token revokes the family
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token reused or revoked"})
			return
		}
		writeJSON(w, 200, op.issueTokens("", false))
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
	}
}

// issueTokens mints access and refresh tokens (and an ID token at login). Locked.
func (op *hostileOP) issueTokens(nonce string, withID bool) map[string]any {
	at, rt := "at-"+randomToken(16), "rt-"+randomToken(16)
	op.currentRT = rt
	op.issued = append(op.issued, at, rt)
	out := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
		"expires_in": int(op.accessTTL / time.Second)}
	if withID {
		now := time.Now()
		claims := map[string]any{"iss": op.issuer(), "aud": hostileClientID, "sub": hostileSubject, "nonce": nonce,
			"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "email": "user42@example.com",
			"name": "User Forty-Two", "sid": "op-session-1"}
		if op.idClaims != nil {
			op.idClaims(claims)
		}
		idt := op.mint(claims)
		op.issued = append(op.issued, idt)
		out["id_token"] = idt
	}
	return out
}

// mint signs claims as a compact JWS with the current signing key (or alg none). Locked.
func (op *hostileOP) mint(claims map[string]any) string {
	payload, _ := json.Marshal(claims)
	if op.algNone {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		return h + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: op.sign, KeyID: op.signKid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		op.t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		op.t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		op.t.Fatal(err)
	}
	return s
}

func (op *hostileOP) userinfo(w http.ResponseWriter, r *http.Request) {
	op.mu.Lock()
	defer op.mu.Unlock()
	sub := hostileSubject
	if op.userinfoSub != "" {
		sub = op.userinfoSub
	}
	writeJSON(w, 200, map[string]any{"sub": sub, "email": "user42@example.com", "name": "User Forty-Two"})
}

func (op *hostileOP) revoke(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if err := r.ParseForm(); err != nil || !ok || id != hostileClientID || secret != hostileSecret {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	op.revoked = append(op.revoked, r.PostForm.Get("token"))
	w.WriteHeader(200)
}

func (op *hostileOP) logoutToken(edit func(map[string]any)) string {
	op.mu.Lock()
	defer op.mu.Unlock()
	now := time.Now()
	c := map[string]any{"iss": op.issuer(), "aud": hostileClientID, "iat": now.Unix(), "exp": now.Add(2 * time.Minute).Unix(),
		"jti": randomToken(12), "sub": hostileSubject, "sid": "op-session-1",
		"events": map[string]any{backChannelEvent: map[string]any{}}}
	if edit != nil {
		edit(c)
	}
	return op.mint(c)
}

func (op *hostileOP) String() string { return fmt.Sprintf("hostileOP(%s)", op.issuer()) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

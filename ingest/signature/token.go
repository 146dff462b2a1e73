package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"
)

// GitLab sends the configured secret token itself in X-Gitlab-Token;
// Postmark sends the credentials of the webhook URL's basic auth. Neither
// signs the body: TLS is what protects it, and the token is compared in
// constant time (over SHA-256 digests, so that not even its length leaks).
const (
	gitlabTokenHeader = "X-Gitlab-Token"
	authorization     = "Authorization"
)

// tokenVerifier compares a shared token taken from the request.
type tokenVerifier struct {
	keys  []key
	token func(r *Request) ([]byte, error)
}

func (v *tokenVerifier) Verify(r *Request, _ time.Time) (Result, error) {
	got, err := v.token(r)
	if err != nil {
		return Result{}, err
	}
	gd := sha256.Sum256(got)
	found := -1
	for i := range v.keys {
		kd := sha256.Sum256(v.keys[i].value)
		if hmac.Equal(gd[:], kd[:]) && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return Result{}, badSignature()
	}
	return Result{SecretID: v.keys[found].id}, nil
}

func gitlabScheme(Config) (scheme, error) {
	return scheme{
		key: rawKey,
		verifier: func(keys []key, _ time.Duration) (Verifier, error) {
			return &tokenVerifier{keys: keys, token: func(r *Request) ([]byte, error) {
				v, err := header(r.Header, gitlabTokenHeader)
				return []byte(v), err
			}}, nil
		},
		sign: func(secret []byte, r *Request, _ time.Time, _ string) error {
			r.Header.Set(gitlabTokenHeader, string(secret))
			return nil
		},
		describe: Description{
			Headers: []string{gitlabTokenHeader},
			Content: "no signature: the secret token itself, compared in constant time",
		},
	}, nil
}

func postmarkScheme(Config) (scheme, error) {
	return scheme{
		key: func(v []byte) ([]byte, error) {
			if !strings.Contains(string(v), ":") {
				return nil, errors.New("postmark secret must be user:password (the webhook URL's basic auth)")
			}
			return rawKey(v)
		},
		verifier: func(keys []key, _ time.Duration) (Verifier, error) {
			return &tokenVerifier{keys: keys, token: basicCredentials}, nil
		},
		sign: func(secret []byte, r *Request, _ time.Time, _ string) error {
			r.Header.Set(authorization, "Basic "+base64.StdEncoding.EncodeToString(secret))
			return nil
		},
		describe: Description{
			Headers: []string{authorization},
			Content: "no signature: HTTP basic auth user:password of the webhook URL, compared in constant time",
		},
	}, nil
}

// basicCredentials returns the "user:password" of a Basic Authorization header.
func basicCredentials(r *Request) ([]byte, error) {
	v, err := header(r.Header, authorization)
	if err != nil {
		return nil, err
	}
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return nil, malformed(authorization, "want Basic credentials")
	}
	b, err := base64.StdEncoding.DecodeString(trim(cred))
	if err != nil || !strings.Contains(string(b), ":") {
		return nil, malformed(authorization, "want base64 of user:password")
	}
	return b, nil
}

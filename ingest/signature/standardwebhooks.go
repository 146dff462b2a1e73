package signature

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names, and the Svix names accepted as fallback.
const (
	standardIDHeader  = "Webhook-Id"
	standardTSHeader  = "Webhook-Timestamp"
	standardSigHeader = "Webhook-Signature"
	svixIDHeader      = "Svix-Id"
	svixTSHeader      = "Svix-Timestamp"
	svixSigHeader     = "Svix-Signature"
	standardPrefix    = "whsec_"
	standardVersion   = "v1"
)

// standardVerifier implements Standard Webhooks (Svix):
// webhook-signature: "v1,<base64>" entries separated by spaces, each being
// base64(HMAC-SHA256(base64-decoded secret, "<id>.<ts>.<raw body>")).
// When none of the webhook-* headers is present, the svix-* names are used.
type standardVerifier struct {
	keys []key
	tol  time.Duration
}

func (v *standardVerifier) Verify(r *Request, now time.Time) (Result, error) {
	h, body := r.Header, r.Body
	idName, tsName, sigName := standardIDHeader, standardTSHeader, standardSigHeader
	if len(h.Values(idName)) == 0 && len(h.Values(tsName)) == 0 && len(h.Values(sigName)) == 0 {
		idName, tsName, sigName = svixIDHeader, svixTSHeader, svixSigHeader
	}
	msgID, err := eventIDHeader(h, idName)
	if err != nil {
		return Result{}, err
	}
	tsText, ts, err := timestampHeader(h, tsName)
	if err != nil {
		return Result{}, err
	}
	sigText, err := header(h, sigName)
	if err != nil {
		return Result{}, err
	}
	sigs, err := parseStandardSignatures(sigText)
	if err != nil {
		return Result{}, malformed(sigName, err.Error())
	}
	id, ok := match(v.keys, sigs, []byte(msgID+"."+tsText+"."), body)
	if !ok {
		return Result{}, badSignature()
	}
	t := time.Unix(ts, 0)
	if err := checkWindow(t, now, v.tol); err != nil {
		return Result{}, err
	}
	return Result{SecretID: id, Timestamp: t, EventID: msgID}, nil
}

// parseStandardSignatures parses a webhook-signature value: entries
// "<version>,<value>" separated by whitespace. As the Standard Webhooks
// libraries do, an entry it cannot use is skipped: one without a comma, of
// another version (e.g. v1a, asymmetric), or a v1 value that is not base64
// of 32 bytes. At least one usable v1 entry is required, and at most
// maxCandidates are tried.
func parseStandardSignatures(s string) ([][]byte, error) {
	var sigs [][]byte
	for _, entry := range strings.Fields(s) {
		version, val, ok := strings.Cut(entry, ",")
		if !ok || version != standardVersion {
			continue
		}
		sig, err := parseBase64SHA256(val)
		if err != nil {
			continue
		}
		if len(sigs) == maxCandidates {
			return nil, errors.New("too many v1 signatures")
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, errors.New("no usable v1 signature (a v1 entry holding base64 of 32 bytes)")
	}
	return sigs, nil
}

// formatStandardSignatures formats sigs as a webhook-signature value.
func formatStandardSignatures(sigs [][]byte) string {
	parts := make([]string, len(sigs))
	for i, s := range sigs {
		parts[i] = standardVersion + "," + base64.StdEncoding.EncodeToString(s)
	}
	return strings.Join(parts, " ")
}

// decodeStandardSecret decodes "whsec_<base64>" or bare base64 into key
// bytes. The error never contains the secret.
func decodeStandardSecret(value []byte) ([]byte, error) {
	s := strings.TrimPrefix(string(value), standardPrefix)
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("standard-webhooks secret must be whsec_ followed by base64 (or bare base64)")
	}
	if len(k) == 0 {
		return nil, errors.New("standard-webhooks secret decodes to an empty key")
	}
	return k, nil
}

func standardScheme(Config) (scheme, error) {
	return scheme{
		tolerance: defaultTolerance,
		key:       decodeStandardSecret,
		verifier: func(keys []key, tol time.Duration) (Verifier, error) {
			return &standardVerifier{keys: keys, tol: tol}, nil
		},
		sign: func(secret []byte, r *Request, now time.Time, eventID string) error {
			k, err := decodeStandardSecret(secret)
			if err != nil {
				return err
			}
			if !validEventID(eventID) {
				return errors.New("event id must be 1 to 255 visible ASCII characters")
			}
			ts := strconv.FormatInt(now.Unix(), 10)
			r.Header.Set(standardIDHeader, eventID)
			r.Header.Set(standardTSHeader, ts)
			r.Header.Set(standardSigHeader, formatStandardSignatures([][]byte{macSHA256(k, []byte(eventID+"."+ts+"."), r.Body)}))
			return nil
		},
		describe: Description{
			Headers:   []string{standardIDHeader, standardTSHeader, standardSigHeader, "(or svix-id, svix-timestamp, svix-signature)"},
			Content:   "HMAC-SHA256 base64 of {id}.{timestamp}.{body} in webhook-signature entries v1,<sig>; secret whsec_<base64>",
			Timestamp: "webhook-timestamp (unix), ±5m0s",
		},
	}, nil
}

package ingest

import (
	"github.com/gatehouse/gatehouse/ingest/signature"
	"github.com/gatehouse/gatehouse/internal/config"
)

// SignatureConfig is the verifier configuration of provider p: its kind's
// scheme, its window, headers, definition, public URL and secrets.
func SignatureConfig(p *config.Provider) signature.Config {
	sc := signature.Config{
		Scheme:          p.Kind().Scheme,
		Tolerance:       p.Tolerance,
		TimestampHeader: p.TimestampHeader,
		SignatureHeader: p.SignatureHeader,
		HMAC:            p.HMAC,
		PublicURL:       p.PublicURL,
	}
	for _, s := range p.Secrets {
		sc.Secrets = append(sc.Secrets, signature.Secret{ID: s.ID, Value: s.Resolved()})
	}
	return sc
}

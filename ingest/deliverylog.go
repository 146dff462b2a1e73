package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
)

// delivery accumulates what the per-delivery log line reports.
type delivery struct {
	requestID, eventID, typ, queueID, state, outcome, reason string
	secretID                                                 string
	verified, batch                                          bool
	status, attempt, events                                  int
	err                                                      error
}

func (r *Receiver) logDelivery(ctx context.Context, provider string, d *delivery) {
	attrs := []slog.Attr{
		slog.String("provider", provider), slog.String("event_id", d.eventID), slog.String("type", d.typ),
		slog.Bool("verified", d.verified), slog.Int("response_status", d.status), slog.String("queue_id", d.queueID),
		slog.String("processing_state", d.state), slog.Int("attempt", d.attempt), slog.String("request_id", d.requestID),
		slog.String("outcome", d.outcome),
	}
	if d.reason != "" {
		attrs = append(attrs, slog.String("reason", d.reason))
	}
	if d.batch {
		attrs = append(attrs, slog.Int("events", d.events)) // a batch: event_id is its first event's
	}
	level := slog.LevelInfo
	if d.err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("err", d.err.Error()))
	} else if d.status >= 400 {
		level = slog.LevelWarn
	}
	r.cfg.Logger.LogAttrs(ctx, level, "webhook delivery", attrs...)
}

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

func requestID(req *http.Request) string {
	if v := req.Header.Get("X-Request-Id"); safeRequestID.MatchString(v) {
		return v
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

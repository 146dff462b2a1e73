package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// errConflict answers a replay the event's state forbids without force.
var errConflict = errors.New("event cannot be replayed in its state")

// errUnconfigured answers a replay of an event whose provider is no longer
// configured (the CLI refuses it the same way).
var errUnconfigured = errors.New("event's provider is not configured")

// errNoReplayer answers a replay when the server has no Replayer.
var errNoReplayer = errors.New("replay is not available")

// ReplayResult is the answer to a replay.
type ReplayResult struct {
	Provider      string `json:"provider"`
	EventID       string `json:"event_id"`
	OutboxID      string `json:"outbox_id"`
	PreviousState string `json:"previous_state"`
	Forced        bool   `json:"forced"`
}

// replayEvent re-enqueues a stored, verified event through the Replayer
// (admin.Replay, the same function `gatehouse replay` uses): in one transaction a new
// outbox row for the stored payload exactly as the receiver writes it, the
// inbox row back to pending with attempts reset, and a row in replays naming
// the operator. Events in a final state (succeeded, ignored_stale, skipped)
// or in processing, and unverified ones, are refused with 409 unless
// ?force=true. It never forges an inbound HTTP request.
func (s *Server) replayEvent(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	force := false
	q := r.URL.Query()
	switch v := q.Get("force"); {
	case !q.Has("force"), v == "false":
	case v == "true":
		force = true
	default:
		s.fail(w, r, badRequest("force must be true or false"))
		return
	}
	provider, eventID := pathParam(r, "provider"), pathParam(r, "event_id")
	res, err := s.replay(r.Context(), provider, eventID, force, "api:"+c.User.Issuer+" "+c.User.Subject)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.cfg.Logger.Info("event replayed via api", "provider", provider, "event_id", eventID,
		"queue_id", res.OutboxID, "previous_state", res.PreviousState, "forced", force,
		"operator_issuer", c.User.Issuer, "operator_subject", c.User.Subject)
	writeJSON(w, http.StatusAccepted, res)
}

func (s *Server) replay(ctx context.Context, provider, eventID string, force bool, by string) (*ReplayResult, error) {
	if s.cfg.Replayer == nil {
		return nil, errNoReplayer
	}
	res, err := s.cfg.Replayer.Replay(ctx, provider, eventID, force, by)
	return s.replayAnswer(provider, eventID, force, res, err)
}

// replayAnswer maps a Replayer's outcome to the answer, its refusals to
// this surface's errors.
func (s *Server) replayAnswer(provider, eventID string, force bool, res ReplayOutcome, err error) (*ReplayResult, error) {
	switch {
	case errors.Is(err, ErrEventNotFound):
		return nil, errNotFound
	case errors.Is(err, ErrProviderNotConfigured):
		return nil, fmt.Errorf("%w: %w", errUnconfigured, err)
	case errors.Is(err, ErrNotReplayable):
		return nil, fmt.Errorf("%w: %w", errConflict, err)
	case err != nil:
		return nil, err
	}
	return &ReplayResult{Provider: provider, EventID: eventID, OutboxID: res.OutboxID, PreviousState: res.PreviousState, Forced: force}, nil
}

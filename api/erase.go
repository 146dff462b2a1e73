package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gatehouse/gatehouse/ingest/admin"
)

// ErasureRequest is the body of POST /erasures: the provider and exactly
// one selector (event_id, object_id, or path with value).
type ErasureRequest struct {
	Provider string `json:"provider"`
	EventID  string `json:"event_id,omitempty"`
	ObjectID string `json:"object_id,omitempty"`
	Path     string `json:"path,omitempty"`
	Value    string `json:"value,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ErasureResult is the answer to an erasure: the audit row's id and what
// was erased.
type ErasureResult = admin.ErasureResult

// ErrBadErasure is returned (wrapped) by an Eraser for a request that
// selects nothing well-defined; answered 400.
var ErrBadErasure = errors.New("api: invalid erasure")

// Eraser removes stored payloads and audits it (admin.Erase, the same
// function `gatehouse erase` runs).
type Eraser interface {
	Erase(ctx context.Context, req ErasureRequest, requestedBy string) (ErasureResult, error)
}

// IngestEraser is admin.Erase for the API, with the object selector
// resolved through the provider's aggregate_id_path and key keying the
// digest the audit keeps of an object id or a path's value
// (admin.AuditKey).
func IngestEraser(pool *pgxpool.Pool, targets map[string]admin.ReplayTarget, key admin.AuditKey) Eraser {
	return ingestEraser{pool: pool, targets: targets, key: key}
}

type ingestEraser struct {
	pool    *pgxpool.Pool
	targets map[string]admin.ReplayTarget
	key     admin.AuditKey
}

func (e ingestEraser) Erase(ctx context.Context, req ErasureRequest, by string) (ErasureResult, error) {
	er := admin.Erasure{Provider: req.Provider, EventID: req.EventID, ObjectID: req.ObjectID, Path: req.Path, Value: req.Value,
		RequestedBy: by, Reason: req.Reason, AuditKey: e.key}
	if t, ok := e.targets[req.Provider]; ok {
		er.ObjectPaths, er.Topic = t.AggregateIDPath, t.Topic
	}
	res, err := admin.Erase(ctx, e.pool, er)
	if errors.Is(err, admin.ErrBadErasure) {
		return res, errors.Join(ErrBadErasure, err)
	}
	return res, err
}

// maxErasureBody bounds the request body of an erasure.
const maxErasureBody = 16 << 10

// erase answers POST /erasures (operators, scope events:erase): the
// payloads of the selected events are replaced by an erasure marker, the
// dedupe keys kept, and an audit row names the operator.
func (s *Server) erase(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Eraser == nil {
		writeJSONError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "erasure is not available on this server")
		return
	}
	var req ErasureRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxErasureBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, r, badRequest("body must be a JSON object with provider and one of event_id, object_id, or path and value"))
		return
	}
	c := CallerFrom(r.Context())
	res, err := s.cfg.Eraser.Erase(r.Context(), req, "api:"+c.User.Issuer+" "+c.User.Subject)
	if errors.Is(err, ErrBadErasure) {
		var msg string
		if errors.Is(err, admin.ErrBadErasure) {
			msg = err.Error()
		}
		s.fail(w, r, badRequest("invalid erasure: "+msg))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// res.Selector holds a digest of an object id or a value, never req's.
	s.cfg.Logger.Info("events erased via api", "provider", req.Provider, "selector", res.Selector, "events", res.Events,
		"outbox_rows", res.OutboxRows, "objects", res.Objects, "erasure_id", res.ID,
		"operator_issuer", c.User.Issuer, "operator_subject", c.User.Subject)
	writeJSON(w, http.StatusOK, res)
}

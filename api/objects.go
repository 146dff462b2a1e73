package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Object is a provider object from the consumers' projection
// (provider_objects, migrations/00001_baseline.sql).
type Object struct {
	Provider    string          `json:"provider"`
	ObjectID    string          `json:"object_id"`
	ObjectType  string          `json:"object_type"`
	Version     int64           `json:"version"`
	UpdatedAt   time.Time       `json:"updated_at"`
	LastEventID string          `json:"last_event_id"`
	Data        json.RawMessage `json:"data"`
}

// ownerClause restricts provider_objects rows of provider $1 to the caller.
// A provider's owner_path (dotted, into the object's data) holds either
// "<issuer> <subject>" or, when owner_issuer is configured, a bare subject
// of that issuer. $2 is the path as text[], $3/$4 the caller's issuer and
// subject, $5 the provider's owner_issuer, empty when none.
const ownerClause = `provider = $1 AND (
  data #>> $2::text[] = $3 || ' ' || $4
  OR ($5 <> '' AND $5 = $3 AND data #>> $2::text[] = $4))`

const objectColumns = `provider, object_id, object_type, version, updated_at, last_event_id, data`

func scanObject(row pgx.Row) (*Object, error) {
	var o Object
	if err := row.Scan(&o.Provider, &o.ObjectID, &o.ObjectType, &o.Version, &o.UpdatedAt, &o.LastEventID, &o.Data); err != nil {
		return nil, err
	}
	o.UpdatedAt = o.UpdatedAt.UTC()
	return &o, nil
}

// ownerArgs returns the owner clause's arguments for provider, false when
// the provider maps no owner (its objects are then nobody's to read).
func (s *Server) ownerArgs(provider string, c *Caller) ([]any, bool) {
	p, ok := s.cfg.Providers[provider]
	if !ok || p.OwnerPath == "" {
		return nil, false
	}
	return []any{provider, strings.Split(p.OwnerPath, "."), c.User.Issuer, c.User.Subject, p.OwnerIssuer}, true
}

// getObject answers one object if the caller owns it; an object of
// someone else is 404, exactly like a missing one.
func (s *Server) getObject(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	provider := pathParam(r, "provider")
	args, ok := s.ownerArgs(provider, c)
	if !ok {
		s.fail(w, r, errNotFound)
		return
	}
	args = append(args, pathParam(r, "object_id"))
	o, err := scanObject(s.cfg.Pool.QueryRow(r.Context(),
		`SELECT `+objectColumns+` FROM provider_objects WHERE `+ownerClause+` AND object_id = $6`, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		err = errNotFound // a missing object and one not the caller's look alike
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// objectCursor is the keyset position after a page's last object.
type objectCursor struct {
	Provider string `json:"p"`
	ObjectID string `json:"o"`
}

// listObjects answers the caller's objects across every provider with an
// owner mapping (or one, with ?provider=), ordered by (provider, object_id).
func (s *Server) listObjects(w http.ResponseWriter, r *http.Request) {
	c := CallerFrom(r.Context())
	q := r.URL.Query()
	limit, err := pageSize(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var cur objectCursor
	if v := q.Get("cursor"); v != "" {
		if err := decodeCursor(v, &cur); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	want, err := filterParam(q, "provider")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var providers []string
	for name := range s.cfg.Providers {
		if want == "" || want == name {
			providers = append(providers, name)
		}
	}
	sort.Strings(providers)
	out := []*Object{}
	for _, name := range providers {
		if name < cur.Provider || len(out) > limit {
			continue
		}
		args, ok := s.ownerArgs(name, c)
		if !ok {
			continue
		}
		after := ""
		if name == cur.Provider {
			after = cur.ObjectID
		}
		args = append(args, after, limit+1-len(out))
		rows, err := s.cfg.Pool.Query(r.Context(), `SELECT `+objectColumns+` FROM provider_objects
WHERE `+ownerClause+` AND object_id > $6 ORDER BY object_id LIMIT $7`, args...)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for rows.Next() {
			o, err := scanObject(rows)
			if err != nil {
				rows.Close()
				s.fail(w, r, err)
				return
			}
			out = append(out, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	resp := map[string]any{}
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		resp["next_cursor"] = encodeCursor(objectCursor{Provider: last.Provider, ObjectID: last.ObjectID})
	}
	resp["objects"] = out
	writeJSON(w, http.StatusOK, resp)
}

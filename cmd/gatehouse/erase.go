package main

import (
	"context"
	"fmt"
	"os/user"

	"github.com/gatehouse/gatehouse/ingest/admin"
	"github.com/gatehouse/gatehouse/internal/config"
)

// runErase removes the stored payload of one event, of every event about
// one object, or of every event whose payload holds a value at a path,
// keeping their dedupe keys, and records the erasure in the audit table.
func runErase(ctx context.Context, e env, args []string) error {
	fs, cfgPath := newFlags("erase", e)
	provider := fs.String("provider", "", "provider of the events; required")
	eventID := fs.String("event-id", "", "erase this one event")
	object := fs.String("object", "", "erase every event about this object (its aggregate id, found at the provider's aggregate_id_path)")
	path := fs.String("path", "", "with --value: erase every event whose payload holds --value at this dotted path (e.g. data.object.customer)")
	value := fs.String("value", "", "the value at --path")
	reason := fs.String("reason", "", "why (kept in the audit row), e.g. a ticket reference")
	b, err := loadBase(ctx, e, fs, cfgPath, args)
	if err != nil {
		return err
	}
	defer b.pool.Close()
	who := "gatehouse erase"
	if u, err := user.Current(); err == nil {
		who += " by " + u.Username
	}
	req := admin.Erasure{Provider: *provider, EventID: *eventID, ObjectID: *object, Path: *path, Value: *value,
		RequestedBy: who, Reason: *reason, AuditKey: erasureAuditKey(b.cfg)}
	if p := b.cfg.Providers[*provider]; p != nil {
		req.ObjectPaths, req.Topic = p.AggregateIDPath, p.Topic
	}
	res, err := admin.Erase(ctx, b.pool, req)
	if err != nil {
		return fmt.Errorf("erase: %w", err)
	}
	fmt.Fprintf(e.stdout, "erased %s/%s: %d event(s), %d outbox row(s), %d object projection(s), %d notice(s); audit id %d\n",
		*provider, res.Selector, res.Events, res.OutboxRows, res.Objects, res.Notices, res.ID)
	// res.Selector holds a digest of an object id or a value, never the flag's.
	b.log.Info("events erased", "provider", *provider, "selector", res.Selector, "events", res.Events,
		"outbox_rows", res.OutboxRows, "objects", res.Objects, "notices", res.Notices, "erasure_id", res.ID, "requested_by", who)
	return nil
}

// erasureAuditKey is the key of the digest an erasure's audit keeps of an
// object id or a path's value: derived from the newest token-encryption
// key (auth.encryption_keys[0], admin.NewAuditKey), the one secret every
// deployment with the API already holds outside the database. Without
// one the audit keeps no digest (docs/SECURITY.md "Erasure").
func erasureAuditKey(cfg *config.Config) admin.AuditKey {
	if len(cfg.Auth.EncryptionKeys) == 0 {
		return admin.AuditKey{}
	}
	k := cfg.Auth.EncryptionKeys[0]
	return admin.NewAuditKey(k.ID, k.Key())
}

-- +goose Up
-- The OP revocation queue (auth/maintenance.go) backs off per family: a
-- family whose revocation failed waits op_revoke_next_at before its next
-- try, so failing families no longer come first on every round and starve
-- a real logout's. A family whose tokens cannot be decrypted (its key was
-- removed) is given up after a few tries: op_revoked_at is set, with the
-- reason in op_revoke_error.
ALTER TABLE auth_refresh_families
    ADD COLUMN op_revoke_attempts int NOT NULL DEFAULT 0,
    ADD COLUMN op_revoke_next_at  timestamptz,
    ADD COLUMN op_revoke_error    text;
DROP INDEX auth_refresh_families_op_idx;
CREATE INDEX auth_refresh_families_op_idx ON auth_refresh_families ((coalesce(op_revoke_next_at, revoked_at)))
    WHERE revoked_at IS NOT NULL AND op_revoked_at IS NULL;

-- +goose Down
DROP INDEX auth_refresh_families_op_idx;
CREATE INDEX auth_refresh_families_op_idx ON auth_refresh_families (revoked_at)
    WHERE revoked_at IS NOT NULL AND op_revoked_at IS NULL;
ALTER TABLE auth_refresh_families
    DROP COLUMN op_revoke_attempts,
    DROP COLUMN op_revoke_next_at,
    DROP COLUMN op_revoke_error;

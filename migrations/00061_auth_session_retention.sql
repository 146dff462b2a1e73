-- +goose NO TRANSACTION
-- +goose Up
-- Retention of ended sessions (auth.session_retention, README
-- "Sessions"): the purge walks sessions by the time they ended and
-- families by the time their OP revocation finished, and checks that no
-- session still names a family. Built concurrently: logins go on.
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_sessions_ended_idx ON auth_sessions (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_sessions_family_idx ON auth_sessions (family_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_tokens_family_idx ON auth_tokens (family_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS auth_refresh_families_done_idx ON auth_refresh_families (op_revoked_at) WHERE op_revoked_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS auth_refresh_families_done_idx;
DROP INDEX CONCURRENTLY IF EXISTS auth_tokens_family_idx;
DROP INDEX CONCURRENTLY IF EXISTS auth_sessions_family_idx;
DROP INDEX CONCURRENTLY IF EXISTS auth_sessions_ended_idx;

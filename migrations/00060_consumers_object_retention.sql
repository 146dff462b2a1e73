-- +goose NO TRANSACTION
-- +goose Up
-- Retention per provider of the consumers' projection and effect log
-- (README "Retention"): the sweeps walk (provider, time) so each provider
-- loses its own expired rows, oldest first, without reading the rows it
-- keeps. Built concurrently: writers are not blocked on a large table.
CREATE INDEX CONCURRENTLY IF NOT EXISTS provider_objects_provider_updated_at_idx ON provider_objects (provider, updated_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS provider_object_changes_provider_applied_at_idx ON provider_object_changes (provider, applied_at);
DROP INDEX CONCURRENTLY IF EXISTS provider_object_changes_applied_at_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS provider_object_changes_applied_at_idx ON provider_object_changes (applied_at);
DROP INDEX CONCURRENTLY IF EXISTS provider_object_changes_provider_applied_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS provider_objects_provider_updated_at_idx;

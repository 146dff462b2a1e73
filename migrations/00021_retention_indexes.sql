-- +goose Up
-- Retention of the tables that are not partitioned (README "Retention"):
-- the sweeps delete their rows oldest first, in batches, through these
-- time indexes (appended at the right edge: cheap to maintain).
CREATE INDEX processed_events_processed_at_idx ON processed_events (processed_at);
CREATE INDEX provider_object_changes_applied_at_idx ON provider_object_changes (applied_at);
CREATE INDEX replays_requested_at_idx ON replays (requested_at);

-- +goose Down
DROP INDEX replays_requested_at_idx;
DROP INDEX provider_object_changes_applied_at_idx;
DROP INDEX processed_events_processed_at_idx;

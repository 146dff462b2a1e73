-- +goose Up
-- Relay (ingest/relay): poll mode and the dispatcher keep per-key order by
-- looking for an earlier unsent row of the same key; the retention sweep
-- deletes published rows by age.
CREATE INDEX outbox_unsent_key_idx ON outbox (topic, aggregateid, seq) WHERE published_at IS NULL;
CREATE INDEX outbox_published_idx ON outbox (created_at) WHERE published_at IS NOT NULL;

-- +goose Down
DROP INDEX outbox_published_idx;
DROP INDEX outbox_unsent_key_idx;

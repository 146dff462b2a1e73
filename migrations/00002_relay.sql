-- +goose Up
-- Relay (ingest/relay): poll mode and the dispatcher keep per-key order by
-- looking for an earlier unsent row of the same key; with
-- relay.on_published = mark the retention sweep deletes published rows by age.
CREATE INDEX outbox_unsent_key_idx ON outbox (topic, aggregateid, seq) WHERE published_at IS NULL;
CREATE INDEX outbox_published_idx ON outbox (created_at) WHERE published_at IS NOT NULL;

-- One row per replication slot the relay streams: rows committed before a
-- new slot's consistent point never come through it, so the relay publishes
-- them (an initial snapshot) before it streams, and records here that it
-- did, so a crash in between repeats the snapshot instead of skipping it.
CREATE TABLE relay_slot (
    slot              text PRIMARY KEY,
    created_at        timestamptz NOT NULL DEFAULT now(),
    snapshot_done_at  timestamptz
);

-- +goose Down
DROP TABLE relay_slot;
DROP INDEX outbox_published_idx;
DROP INDEX outbox_unsent_key_idx;

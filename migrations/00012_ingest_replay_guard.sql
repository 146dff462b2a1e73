-- +goose Up
-- The receiver's replay guard (ingest/guard.go): for providers whose event
-- id is not covered by their signature, the digest of the signed content
-- (or Mailgun's signature token) with the event id it first came with.
-- A row lives until expires_at (the replay window, or replay_guard_ttl);
-- expired rows are ignored at once and deleted in bounded batches by the
-- receiver's sweep (oldest first, through the expires_at index).
CREATE TABLE ingest_replay_guard (
    key         bytea       PRIMARY KEY,  -- SHA-256 of provider, guard kind and content
    event_id    text        NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX ingest_replay_guard_expires_idx ON ingest_replay_guard (expires_at);

-- +goose Down
DROP TABLE ingest_replay_guard;

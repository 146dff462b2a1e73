-- +goose Up
-- outbox_erasures lists the outbox rows whose payload an erasure replaced
-- (ingest.Erase, in the erasure's transaction). The relay in replication
-- mode publishes the image of the row's INSERT decoded from the WAL, which
-- the erasure's UPDATE does not change: before producing a transaction's
-- rows it looks them up here and publishes the erasure marker instead of a
-- payload erased before publication (ingest/relay/erased.go). Rows are
-- kept as long as the erasure audit (storage.audit_retention).
CREATE TABLE outbox_erasures (
    outbox_id   uuid        PRIMARY KEY,
    provider    text        NOT NULL,
    event_id    text        NOT NULL,
    erasure_id  bigint      NOT NULL,
    erased_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_erasures_erased_at_idx ON outbox_erasures (erased_at);

-- +goose Down
DROP TABLE outbox_erasures;
